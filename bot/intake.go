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
// trip and nothing else: no Postgres, no platform call. A request whose
// DedupeKey was seen returns the first request's id. Too many requests from
// a user or channel give ErrRateLimited; the person is told "slow down"
// off the caller's path, once per window, and only a few people per
// channel window.
func (e *Engine) Submit(ctx context.Context, r board.Request) (id board.RequestID, err error) {
	defer func() { e.observeSubmit(r, id, err) }()
	r.Text = strings.TrimSpace(r.Text)
	if r.Text == "" && r.Revises == "" && r.Again == "" {
		return "", errors.New("empty request")
	}
	if r.ID == "" {
		r.ID = NewRequestID()
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
		return "", unavailable("submit", err)
	}
	switch res.Outcome {
	case board.AdmitDuplicate:
		return res.RequestID, nil
	case board.AdmitThrottled:
		limit, who := e.cfg.UserRate, "you"
		if res.Limit == "channel" {
			limit, who = e.cfg.ChannelRate, "this channel"
		}
		text := fmt.Sprintf("Slow down: %s sent more than %d requests in %s. Try again in a moment.", who, limit.N, limit.Per)
		if res.Notify {
			e.notify(r.Thread, r.User, r.ID, board.Reply{Kind: board.ReplySlowDown, Text: text})
		}
		return "", fmt.Errorf("%w: %s", ErrRateLimited, text)
	}
	return r.ID, nil
}
