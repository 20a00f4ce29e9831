package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
)

// NewRequestID returns a fresh request id, for adapters that show a
// request before submitting it.
func NewRequestID() board.RequestID { return board.NewRequestID() }

// Submit queues a request and returns at once, after one Redis round
// trip and nothing else: no Postgres, no platform call. It returns the
// request's id: r.ID or a new one, or the one the request store gives a
// request with a DedupeKey (on one Redis server, one derived from the key:
// board.RequestIDFor). A request whose DedupeKey was seen queues nothing
// and returns the first request's id. Too many requests from a user or
// channel give ErrRateLimited; the person is told "slow down" off the
// caller's path, once per window, and only a few people per channel
// window.
func (e *Engine) Submit(ctx context.Context, r board.Request) (board.RequestID, error) {
	id, _, err := e.SubmitOnce(ctx, r)
	return id, err
}

// SubmitOnce is Submit, and says whether the request was a redelivery of
// one taken before, for callers that answer the two apart (webhooks).
func (e *Engine) SubmitOnce(ctx context.Context, r board.Request) (id board.RequestID, duplicate bool, err error) {
	defer func() { e.observeSubmit(r, duplicate, err) }()
	r.Text = strings.TrimSpace(r.Text)
	if r.Text == "" && r.Revises == "" && r.Again == "" {
		return "", false, errors.New("empty request")
	}
	if r.ID == "" && r.DedupeKey == "" {
		r.ID = NewRequestID() // one with a key is given its id by the request store
	}
	if r.ReceivedAt.IsZero() {
		r.ReceivedAt = e.deps.Now()
	}
	if r.Via == "" {
		r.Via = Via(ctx)
	}
	a := board.Admission{
		Record: board.RequestRecord{Request: r, Status: board.RequestStatus{ID: r.ID, State: board.RequestQueued}},
		// As long as the request's record: a webhook redelivered within a
		// week answers the first request's id on the ack path.
		DedupeTTL: 7 * 24 * time.Hour,
		UserKey:   "user:" + string(r.Thread.Channel.Source) + ":" + r.User, UserLimit: e.cfg.UserRate,
		ChannelKey: "channel:" + r.Thread.Channel.Key(), ChannelLimit: e.cfg.ChannelRate,
		ChannelNotices: e.cfg.ChannelNotices, Now: e.deps.Now(),
		// A Slack event answers a duplicate and a refusal alike: 200.
		QuietDuplicates: r.Thread.Channel.Source == board.SourceSlack,
	}
	if r.DedupeKey != "" {
		a.DedupeKey = r.Thread.Channel.Key() + ":" + r.DedupeKey
	}
	res, err := e.deps.Requests.Admit(ctx, a)
	if err != nil {
		return "", false, unavailable("submit", err)
	}
	switch res.Outcome {
	case board.AdmitDuplicate:
		return res.RequestID, true, nil
	case board.AdmitThrottled:
		limit, who := e.cfg.UserRate, "you"
		if res.Limit == "channel" {
			limit, who = e.cfg.ChannelRate, "this channel"
		}
		text := fmt.Sprintf("Slow down: %s sent more than %d requests in %s. Try again in a moment.", who, limit.N, limit.Per)
		if res.Notify {
			e.notify(r.Thread, r.User, res.RequestID, board.Reply{Kind: board.ReplySlowDown, Text: text})
		}
		return "", false, fmt.Errorf("%w: %s", ErrRateLimited, text)
	}
	return res.RequestID, false, nil
}
