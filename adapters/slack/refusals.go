package slack

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
)

// errRefusedBefore is a method the workspace refused lately, not asked
// again.
var errRefusedBefore = errors.New("slack refused this method in this workspace lately")

// refusal says whether err is Slack refusing a method for this app,
// token, workspace or channel, rather than failing to do it.
func refusal(err error) bool {
	var se slackapi.SlackErrorResponse
	if !errors.As(err, &se) {
		return false
	}
	switch se.Err {
	case "not_allowed_token_type", "method_not_supported_for_channel_type", "unknown_method",
		"missing_scope", "not_allowed", "no_permission", "feature_not_enabled", "access_denied", "team_not_allowed":
		return true
	}
	return false
}

// refusalKey names where a method is refused: the workspace (its
// installation; "" with one workspace), or the channel when Slack said
// the channel's type is the reason.
func refusalKey(method, channel string, perChannel bool) string {
	where, _, _ := strings.Cut(channel, "/")
	if !strings.Contains(channel, "/") {
		where = ""
	}
	if perChannel {
		where = channel
	}
	return "slack-refused:" + method + ":" + where
}

// someChannelKey names the mark that some channel of the workspace
// refused method: without it no channel's own mark is read.
func someChannelKey(method, channel string) string {
	return refusalKey(method, channel, false) + ":some-channel"
}

// noteRefusal remembers for refusalTTL that the workspace (or the
// channel) refused method, so it is not asked again for every request.
func (a *Adapter) noteRefusal(ctx context.Context, method, channel string, err error) {
	if !refusal(err) {
		return
	}
	var se slackapi.SlackErrorResponse
	errors.As(err, &se)
	perChannel := se.Err == "method_not_supported_for_channel_type"
	a.logger.Info("slack: method refused; using the fallback for a while", "method", method, "channel", channel, "error", se.Err)
	keys := []string{refusalKey(method, channel, perChannel)}
	if perChannel {
		keys = append(keys, someChannelKey(method, channel))
	}
	for _, key := range keys {
		a.refusals.note(key, true, time.Now())
		if merr := a.memory.Mark(ctx, key, refusalTTL); merr != nil {
			a.logger.Warn("slack: remember a refusal", "err", merr)
		}
	}
}

// refusedBefore says whether channel's workspace (or the channel) refused
// method lately. A mention asks it before its thread status, so its
// answers are kept here for refusalsKept: a workspace with no refusal
// costs no Redis read per mention, and a refusal another replica noted is
// seen within refusalsKept.
func (a *Adapter) refusedBefore(ctx context.Context, method, channel string) bool {
	if a.markedKept(ctx, refusalKey(method, channel, false)) {
		return true
	}
	return a.markedKept(ctx, someChannelKey(method, channel)) && a.markedKept(ctx, refusalKey(method, channel, true))
}

// markedKept is whether key is marked, as a.refusals keeps it, read from
// Redis when it keeps nothing for key; a failed read counts as unmarked
// and is not kept.
func (a *Adapter) markedKept(ctx context.Context, key string) bool {
	now := time.Now()
	if marked, ok := a.refusals.kept(key, now); ok {
		return marked
	}
	marked, err := a.memory.Marked(ctx, key)
	if err != nil {
		return false
	}
	a.refusals.note(key, marked, now)
	return marked
}

// refusalsKept is how long a replica trusts what it read of a refusal
// mark; maxRefusalsKept bounds how many marks it keeps.
const (
	refusalsKept    = 10 * time.Second
	maxRefusalsKept = 4096
)

// refusals are the refusal marks a replica read lately: each key's
// answer and when it was read.
type refusals struct {
	mu   sync.Mutex
	seen map[string]refusalSeen
}

type refusalSeen struct {
	marked bool
	at     time.Time
}

func newRefusals() *refusals { return &refusals{seen: map[string]refusalSeen{}} }

// kept is key's answer read less than refusalsKept before now.
func (r *refusals) kept(key string, now time.Time) (marked, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.seen[key]
	if !ok || now.Sub(s.at) >= refusalsKept {
		return false, false
	}
	return s.marked, true
}

// note keeps key's answer as of now; past maxRefusalsKept keys the old
// ones go.
func (r *refusals) note(key string, marked bool, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) >= maxRefusalsKept {
		for k, s := range r.seen {
			if now.Sub(s.at) >= refusalsKept {
				delete(r.seen, k)
			}
		}
		if len(r.seen) >= maxRefusalsKept {
			clear(r.seen)
		}
	}
	r.seen[key] = refusalSeen{marked: marked, at: now}
}
