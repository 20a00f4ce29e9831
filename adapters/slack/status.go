package slack

import (
	"context"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"
	"golang.org/x/time/rate"

	"github.com/bobnet/bobnet/board"
)

// Showings keeps how a request is shown while it is planned (its
// showing: a hash of fields), for every replica: the one that
// acknowledged the mention sets the thread status, the worker's streams
// the draft and posts the answer. *redisstore.InFlight is one.
type Showings interface {
	ShowingSet(ctx context.Context, id board.RequestID, fields map[string]string, ttl time.Duration) error
	ShowingClaim(ctx context.Context, id board.RequestID, field, value string, with map[string]string, ttl time.Duration) (bool, map[string]string, error)
	Showing(ctx context.Context, id board.RequestID) (map[string]string, error)
	// HoldStream and ReleaseStream keep a thread to one streamed draft at
	// a time, so an answer finds its request's stream in the thread
	// though no record names it (answer.go).
	HoldStream(ctx context.Context, t board.Thread, id board.RequestID, ttl time.Duration) (bool, error)
	ReleaseStream(ctx context.Context, t board.Thread, id board.RequestID) error
}

// The fields of a showing.
const (
	fieldUser   = "user"   // who asked: a streamed message's recipient
	fieldTeam   = "team"   // the asker's team
	fieldStatus = "status" // "set" (or being set), or "refused"
	// fieldMsg is the one message the request's draft and answer use,
	// claimed by whoever posts first: msgPlaceholder, msgStream (a
	// streamed draft), msgPosted (a draft posted as a message, where
	// streaming is refused), msgAnswer (the answer came first) or
	// msgFailed (a draft whose start failed: the answer is posted), or
	// postNext (a draft whose stream Slack refused, posted as a message
	// in its next slot).
	fieldMsg      = "msg"
	fieldTS       = "ts"       // that message's ts
	fieldAnswered = "answered" // the answer's message ts, once it went out
)

const (
	msgPlaceholder = "placeholder"
	msgStream      = "stream"
	msgPosted      = "posted"
	msgAnswer      = "answer"
	msgFailed      = "failed"
	postNext       = "post-next"
)

// draftEvent is the metadata type of a placeholder or draft message,
// naming its request; answerEvent that of a reply that answers a request
// (a preview's is previewEvent).
const (
	draftEvent  = "bobnet_draft"
	answerEvent = "bobnet_answer"
)

// draftOpening opens every draft, streamed or posted, and no other
// message: a bot message that opens so without metadata is a stream not
// stopped yet, which is how the answer knows its request's stream in the
// thread when the replica that started it died before recording its ts
// (a posted draft names its request in its metadata).
const draftOpening = "A draft: each card shows as the model writes it, and is checked before you can approve it."

// showingTTL is how long a request's showing is kept: longer than any
// request is planned.
const showingTTL = time.Hour

// Thread statuses.
const (
	planningStatus = "is planning…"
	// statusFor bounds how long a status is renewed, should a request
	// never be answered.
	statusFor = 30 * time.Minute
	// refusalTTL is how long a workspace's refusal of a method is
	// remembered (a reinstall with the scope is used within it).
	refusalTTL = 6 * time.Hour
)

// showPlanning shows in t at once that BobNet is planning request id:
// the thread's status, set right after the ack (once per request, however
// often Slack delivers the event), or where Slack refuses it a
// placeholder message the answer later replaces. Past its workspace's
// status budget a mention gets neither, and who asked is not recorded:
// its draft, once a worker plans it, is posted rather than streamed.
func (a *Adapter) showPlanning(t board.Thread, id board.RequestID, user, team string) {
	if !a.statusBudget.allow(slackTenant(t.Channel.ID), id) {
		return
	}
	a.afterAck("planning status", func(ctx context.Context) {
		// One round trip: who asked, and the claim of the status, "set"
		// before it is (the answer clears a status set or on its way; a
		// refusal overwrites it).
		first, _, err := a.memory.ShowingClaim(ctx, id, fieldStatus, "set", map[string]string{fieldUser: user, fieldTeam: team}, showingTTL)
		if err != nil {
			a.logger.Warn("slack: keep the request's showing", "request", id, "err", err)
			return
		}
		if !first {
			return
		}
		err = a.setStatus(ctx, t, planningStatus, false)
		if err == nil {
			a.statuses.add(id, t, time.Now())
			a.renewStatuses()
			return
		}
		a.logger.Info("slack: no thread status; posting a placeholder", "request", id, "err", err)
		_ = a.setShowing(ctx, id, map[string]string{fieldStatus: "refused"})
		a.postPlaceholder(ctx, t, id)
	})
}

// statusRate and statusBurst are each workspace's budget of thread
// statuses on a replica, a second. Slack gives assistant.threads.setStatus
// limits of its own ("special") per workspace, and a burst of mentions
// past them would be answered 429 and wait: past the budget a mention is
// taken and answered as always, without a status or a placeholder.
const (
	statusRate  = 10
	statusBurst = 20
	// statusBudgets bounds the workspaces whose budgets are kept; past it
	// they start again full.
	statusBudgets = 10000
)

// statusBudget is each workspace's token bucket of thread statuses, and
// what it answered for each request lately: Slack delivers an event
// again, and a request's deliveries share one answer and one token.
type statusBudget struct {
	mu      sync.Mutex
	per     map[board.Tenant]*rate.Limiter
	decided map[board.RequestID]bool
}

func newStatusBudget() *statusBudget {
	return &statusBudget{per: map[board.Tenant]*rate.Limiter{}, decided: map[board.RequestID]bool{}}
}

// allow takes one status from the budget of workspace (a channel's
// tenant, slackTenant) for request id, if it has one left; a request
// asked before gets the same answer.
func (b *statusBudget) allow(workspace board.Tenant, id board.RequestID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ok, seen := b.decided[id]; seen {
		return ok
	}
	l, ok := b.per[workspace]
	if !ok {
		if len(b.per) >= statusBudgets {
			clear(b.per)
		}
		l = rate.NewLimiter(statusRate, statusBurst)
		b.per[workspace] = l
	}
	if len(b.decided) >= statusBudgets {
		clear(b.decided)
	}
	allowed := l.Allow()
	b.decided[id] = allowed
	return allowed
}

// setShowing records fields of id's showing, waiting a while for a Redis
// that is away (a message not recorded is answered beside), and logging
// a failure: what is shown is a courtesy, never a reason to fail the
// request.
func (a *Adapter) setShowing(ctx context.Context, id board.RequestID, fields map[string]string) error {
	err := whileAway(ctx, func() error { return a.memory.ShowingSet(ctx, id, fields, showingTTL) })
	if err != nil {
		a.logger.Warn("slack: keep the request's showing", "request", id, "err", err)
	}
	return err
}

// setStatus sets (or, with "", clears) t's thread status, unless its
// workspace refused to before. The first status of a request goes out at
// once; paced, it waits for the channel's budget (renewals, clearing).
func (a *Adapter) setStatus(ctx context.Context, t board.Thread, status string, paced bool) error {
	if a.refusedBefore(ctx, "status", t.Channel.ID) {
		return errRefusedBefore
	}
	api, channel, err := a.web(ctx, t.Channel.ID)
	if err != nil {
		return err
	}
	call := func(ctx context.Context) error {
		return api.SetAssistantThreadsStatusContext(ctx, slackapi.AssistantThreadsSetStatusParameters{ChannelID: channel, ThreadTS: t.ID, Status: status})
	}
	if paced {
		err = a.paced(ctx, t.Channel.ID, call)
	} else {
		err = a.unpaced(ctx, t.Channel.ID, call)
	}
	a.noteRefusal(ctx, "status", t.Channel.ID, err)
	return err
}

// postPlaceholder posts the message a request's answer will replace,
// where Slack shows no status. The message's metadata names the request.
func (a *Adapter) postPlaceholder(ctx context.Context, t board.Thread, id board.RequestID) {
	first, _, err := a.memory.ShowingClaim(ctx, id, fieldMsg, msgPlaceholder, nil, showingTTL)
	if err != nil || !first {
		return // a draft or the answer is there already
	}
	a.rememberThread(ctx, t)
	api, channel, err := a.web(ctx, t.Channel.ID)
	if err == nil {
		var ts string
		err = a.paced(ctx, t.Channel.ID, func(ctx context.Context) error {
			_, ts, err = api.PostMessageContext(ctx, channel,
				slackapi.MsgOptionText("BobNet is planning…", false),
				slackapi.MsgOptionBlocks(contextBlock(":hourglass_flowing_sand: BobNet is planning…")),
				slackapi.MsgOptionMetadata(slackapi.SlackMetadata{EventType: draftEvent, EventPayload: map[string]any{"request_id": string(id)}}),
				slackapi.MsgOptionTS(t.ID))
			return err
		})
		if err == nil {
			if a.setShowing(ctx, id, map[string]string{fieldTS: ts}) != nil {
				return // the answer finds it in the thread by its metadata
			}
			if as := a.answeredAs(ctx, id); as != "" && as != ts {
				// The answer came while this was on its way, and was
				// posted beside it: the placeholder goes.
				if err := deleteDraft(ctx, api, channel, ts); err != nil {
					a.logger.Warn("slack: delete a late placeholder", "request", id, "err", err)
				}
			}
			return
		}
	}
	a.logger.Warn("slack: post the placeholder", "request", id, "err", err)
	_ = a.setShowing(ctx, id, map[string]string{fieldMsg: msgFailed})
}

// statuses are the thread statuses this replica set, renewed every
// StatusEvery until their request is answered.
type statuses struct {
	mu      sync.Mutex
	set     map[board.RequestID]*threadStatus
	running bool
}

type threadStatus struct {
	thread  board.Thread
	since   time.Time
	renewed time.Time
}

func newStatuses() *statuses { return &statuses{set: map[board.RequestID]*threadStatus{}} }

func (s *statuses) add(id board.RequestID, t board.Thread, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set[id] = &threadStatus{thread: t, since: now, renewed: now}
}

// due are the statuses to renew now (or drop, past statusFor).
func (s *statuses) due(now time.Time, every time.Duration) map[board.RequestID]threadStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[board.RequestID]threadStatus{}
	for id, st := range s.set {
		if now.Sub(st.renewed) >= every {
			out[id] = *st
		}
	}
	return out
}

func (s *statuses) renewed(id board.RequestID, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.set[id]; ok {
		st.renewed = now
	}
}

func (s *statuses) drop(id board.RequestID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.set, id)
}

// renewStatuses starts the loop renewing the statuses, once; it runs for
// the server's lifetime.
func (a *Adapter) renewStatuses() {
	a.statuses.mu.Lock()
	defer a.statuses.mu.Unlock()
	if a.statuses.running {
		return
	}
	a.statuses.running = true
	tick := min(a.cfg.StatusEvery/4, 5*time.Second)
	go func() {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-a.work.Done():
				return
			case <-t.C:
				a.renewDue(a.work)
			}
		}
	}()
}

// renewDue sets again each status due, while its request is still being
// planned: not answered (its showing says so on every replica), not done
// or failed in the engine, and no draft message showing it instead.
func (a *Adapter) renewDue(ctx context.Context) {
	now := time.Now()
	for id, st := range a.statuses.due(now, a.cfg.StatusEvery) {
		if now.Sub(st.since) > statusFor || !a.stillPlanning(ctx, id) {
			a.statuses.drop(id)
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, a.cfg.Timeout)
		err := a.setStatus(cctx, st.thread, planningStatus, true)
		cancel()
		if err != nil {
			a.logger.Warn("slack: renew the thread status", "request", id, "err", err)
		}
		a.statuses.renewed(id, now)
	}
}

// stillPlanning says whether request id waits for its answer with
// nothing but the status to show it.
func (a *Adapter) stillPlanning(ctx context.Context, id board.RequestID) bool {
	sh, err := a.memory.Showing(ctx, id)
	if err != nil || sh[fieldAnswered] != "" || sh[fieldMsg] != "" {
		return false
	}
	st, err := a.eng.Request(ctx, id)
	if err != nil {
		return false
	}
	return st.State == board.RequestQueued || st.State == board.RequestPlanning
}
