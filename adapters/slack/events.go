package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

func (a *Adapter) events(w http.ResponseWriter, r *http.Request, body []byte) {
	var env eventEnvelope
	if err := decodeEnvelope(&a.parsers, body, &env); err != nil {
		http.Error(w, "invalid event JSON", http.StatusBadRequest)
		return
	}
	if env.Type == "url_verification" {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, env.Challenge)
		return
	}
	// Ack first in spirit: the handling below only enqueues.
	if err := a.handleEvent(r.Context(), env); err != nil {
		a.logger.Warn("slack event", "event_id", env.EventID, "err", err)
		if errors.Is(err, bot.ErrUnavailable) {
			// Let Slack retry later; the dedupe keeps it to one request.
			http.Error(w, "temporarily unavailable", http.StatusServiceUnavailable)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// nextMention finds the first mention markup (the bot's or anyone's) in s
// at or after from: "<@", a user id of capitals and digits, then ">" or
// "|" and a label up to ">". It is the regular expression
// <@[A-Z0-9]+(\|[^>]*)?> written out: every mention is stripped on the ack
// path, where the regexp package's matcher cost more than the rest of
// reading the event but one; TestMentionsMatchRegexp holds the two to the
// same matches.
func nextMention(s string, from int) (start, end int, ok bool) {
	for {
		i := strings.Index(s[from:], "<@")
		if i < 0 {
			return 0, 0, false
		}
		start = from + i
		j := start + 2
		for j < len(s) && ('A' <= s[j] && s[j] <= 'Z' || '0' <= s[j] && s[j] <= '9') {
			j++
		}
		if j > start+2 && j < len(s) {
			switch s[j] {
			case '>':
				return start, j + 1, true
			case '|':
				if k := strings.IndexByte(s[j:], '>'); k >= 0 {
					return start, j + k + 1, true
				}
			}
		}
		from = start + 1
	}
}

// stripMentions is s without its mention markup.
func stripMentions(s string) string {
	start, end, ok := nextMention(s, 0)
	if !ok {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) - (end - start))
	from := 0
	for ok {
		b.WriteString(s[from:start])
		from = end
		start, end, ok = nextMention(s, from)
	}
	b.WriteString(s[from:])
	return b.String()
}

// handleEvent turns one event into a request. Shared by HTTP and Socket
// Mode, so both dedupe the same way: by the message's ts (or the event
// id), whatever the transport says about retries.
func (a *Adapter) handleEvent(ctx context.Context, env eventEnvelope) error {
	if ok, err := a.scopeEvent(ctx, &env); !ok {
		return err
	}
	if env.Type != "event_callback" {
		return nil
	}
	ev := env.Event
	if ev.BotID != "" || ev.User == "" || (ev.Subtype != "" && ev.Subtype != "thread_broadcast") {
		return nil // bots, edits, joins: not requests
	}
	switch ev.Type {
	case "app_home_opened":
		a.homeOpened(env.installation, ev.User, ev.Tab)
		return nil
	case "app_mention":
	case "message":
		// A message counts only inside a thread the bot speaks in, where
		// it is the conversation with the bot whoever else it mentions. One
		// that mentions the bot also arrives as app_mention, with the same
		// ts: the dedupe key below makes the two one request.
		if ev.ThreadTS == "" {
			return nil
		}
		in, err := a.memory.Marked(ctx, threadKey(ev.Channel, ev.ThreadTS))
		if err != nil {
			// Unavailable, so the reply is delivered again rather than
			// acked and lost.
			return fmt.Errorf("%w: %w", bot.ErrUnavailable, err)
		}
		if !in {
			return nil
		}
	default:
		return nil
	}
	thread := ev.ThreadTS
	if thread == "" {
		thread = ev.TS
	}
	t := board.Thread{Channel: board.Channel{Source: board.SourceSlack, ID: ev.Channel}, ID: thread}
	text := strings.TrimSpace(stripMentions(ev.Text))
	if text == "" && ev.Type == "message" {
		return nil // only mentions, of colleagues or the bot: not a question to BobNet
	}
	if text == "" || strings.EqualFold(text, "help") {
		// Help once a minute per person and channel: retries and floods
		// of empty mentions do not become floods of replies.
		first, err := a.memory.SeenOnce(ctx, "slack-help:"+ev.Channel+":"+ev.User, time.Minute)
		if err != nil {
			return fmt.Errorf("%w: %w", bot.ErrUnavailable, err)
		}
		if first {
			a.afterAck("help reply", func(ctx context.Context) {
				if err := a.Reply(ctx, t, board.Reply{Kind: board.ReplyInfo, Text: helpText()}); err != nil {
					a.logger.Warn("post help", "err", err)
				}
			})
		}
		return nil
	}
	// The engine's intake dedupes by the message's ts (unique in its
	// channel, the same in a retry and in the app_mention and message
	// events of one message) in the same step that queues, so a failed
	// attempt leaves nothing marked and Slack's retry goes through; a later
	// retry answers the first request.
	r := board.Request{Thread: t, User: ev.User, Text: text}
	switch {
	case ev.TS != "" && a.teams != nil:
		r.DedupeKey = "slack-message:" + ev.Channel + ":" + ev.TS // ts is unique only in its channel
	case ev.TS != "":
		r.DedupeKey = "slack-message:" + ev.TS
	case env.EventID != "":
		r.DedupeKey = "slack:" + env.EventID
	}
	id, err := a.eng.Submit(ctx, r)
	if errors.Is(err, bot.ErrRateLimited) {
		return nil // the engine tells the person, off this path
	}
	if err == nil && id != "" {
		if a.logger.Enabled(ctx, slog.LevelDebug) { // its arguments cost allocations on every event
			a.logger.Debug("slack event taken", "event_id", env.EventID, "ts", ev.TS, "request", id)
		}
		a.showPlanning(t, id, ev.User, env.TeamID)
	}
	return err
}

// threadKey names a thread the bot has posted in.
func threadKey(channel, ts string) string { return "slack-thread:" + channel + ":" + ts }

// rememberThread notes a thread the bot posted in, so plain replies there
// are requests too.
func (a *Adapter) rememberThread(ctx context.Context, t board.Thread) {
	if err := a.memory.Mark(ctx, threadKey(t.Channel.ID, t.ID), 30*24*time.Hour); err != nil {
		a.logger.Warn("remember slack thread", "err", err)
	}
}
