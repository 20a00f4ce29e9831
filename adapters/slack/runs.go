package slack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// A run's progress is one message in its board's thread: a plan block of
// the run's cards, each moving pending → in_progress → complete or error,
// posted at the run's first progress and redrawn (chat.update) as it
// goes, at most once a second per channel with the newest progress,
// ending with the edition's link. The engine's "Run N started" and "Run N
// done" replies, and the review announcements with their buttons, stay.

// runProgressEvent is the metadata type of a run's progress message,
// naming its run: a replica that did not post it finds it in the thread.
const runProgressEvent = "bobnet_run_progress"

// runIdle ends the goroutine of a run that made no progress for this long.
const runIdle = 10 * time.Minute

// runMessages are the runs this replica shows, by run.
type runMessages struct {
	mu sync.Mutex
	by map[board.RunID]*runShowing
}

func newRunMessages() *runMessages { return &runMessages{by: map[board.RunID]*runShowing{}} }

// runShowing is one run's progress message.
type runShowing struct {
	kick chan struct{}

	mu     sync.Mutex
	latest bot.RunProgress
	fresh  bool

	ts string // kept by the goroutine alone
}

// RunProgress shows p in its board's thread: it keeps p as the run's
// newest progress and returns; the run's goroutine shows it.
func (a *Adapter) RunProgress(_ context.Context, p bot.RunProgress) error {
	if p.Thread.Channel.Source != board.SourceSlack || p.Thread.ID == "" || p.Run.ID == "" {
		return nil
	}
	a.runs.mu.Lock()
	rs, ok := a.runs.by[p.Run.ID]
	if !ok {
		rs = &runShowing{kick: make(chan struct{}, 1)}
		a.runs.by[p.Run.ID] = rs
		go a.showRun(p.Run.ID, rs)
	}
	a.runs.mu.Unlock()
	p.Run.Cards = slices.Clone(p.Run.Cards) // drawn later, by another goroutine
	rs.mu.Lock()
	if !rs.latest.Ended {
		rs.latest, rs.fresh = p, true
	}
	rs.mu.Unlock()
	select {
	case rs.kick <- struct{}{}:
	default:
	}
	return nil
}

// showRun draws a run's progress, the newest at each of its channel's
// slots, until the run ended and its end is drawn.
func (a *Adapter) showRun(id board.RunID, rs *runShowing) {
	defer func() {
		a.runs.mu.Lock()
		if a.runs.by[id] == rs {
			delete(a.runs.by, id)
		}
		a.runs.mu.Unlock()
	}()
	idle := time.NewTimer(runIdle)
	defer idle.Stop()
	for {
		select {
		case <-rs.kick:
		case <-idle.C:
			return
		case <-a.work.Done():
			return
		}
		idle.Reset(runIdle)
		rs.mu.Lock()
		p := rs.latest
		rs.mu.Unlock()
		if err := sleep(a.work, a.pace.reserve(p.Thread.Channel.ID)); err != nil {
			return
		}
		rs.mu.Lock()
		p, fresh := rs.latest, rs.fresh
		rs.fresh = false
		rs.mu.Unlock()
		if !fresh {
			continue
		}
		ctx, cancel := context.WithTimeout(a.work, a.cfg.Timeout)
		err := a.drawRun(ctx, rs, p)
		cancel()
		var rl *slackapi.RateLimitedError
		switch {
		case errors.As(err, &rl):
			a.pace.hold(p.Thread.Channel.ID, max(rl.RetryAfter, paceEvery))
			rs.mu.Lock()
			rs.fresh = true
			rs.mu.Unlock()
			select {
			case rs.kick <- struct{}{}:
			default:
			}
		case err != nil:
			a.logger.Warn("slack: show the run's progress", "run", id, "err", err)
		}
		if p.Ended && err == nil {
			return
		}
	}
}

// drawRun posts p's message at the run's first progress (one replica
// posts it: the others find it by its metadata), then redraws it.
func (a *Adapter) drawRun(ctx context.Context, rs *runShowing, p bot.RunProgress) error {
	api, channel, err := a.web(ctx, p.Thread.Channel.ID)
	if err != nil {
		return err
	}
	text, blocks := runMessage(p)
	if rs.ts == "" {
		first, err := a.memory.SeenOnce(ctx, "slack-run-progress:"+string(p.Run.ID), 7*24*time.Hour)
		if err != nil {
			return err
		}
		if !first {
			if rs.ts, err = a.findRunMessage(ctx, api, channel, p); err != nil || rs.ts == "" {
				return err
			}
		} else {
			_, ts, err := api.PostMessageContext(ctx, channel,
				slackapi.MsgOptionText(text, false), slackapi.MsgOptionBlocks(blocks...),
				slackapi.MsgOptionMetadata(slackapi.SlackMetadata{EventType: runProgressEvent, EventPayload: map[string]any{"run_id": string(p.Run.ID)}}),
				slackapi.MsgOptionTS(p.Thread.ID))
			if err != nil {
				return err
			}
			rs.ts = ts
			return nil
		}
	}
	_, _, _, err = api.UpdateMessageContext(ctx, channel, rs.ts, slackapi.MsgOptionText(text, false), slackapi.MsgOptionBlocks(blocks...))
	return err
}

// findRunMessage finds the run's progress message another replica posted
// in the thread (conversations.replies with metadata).
func (a *Adapter) findRunMessage(ctx context.Context, api *slackapi.Client, channel string, p bot.RunProgress) (string, error) {
	cursor := ""
	for range 10 {
		msgs, more, next, err := api.GetConversationRepliesContext(ctx, &slackapi.GetConversationRepliesParameters{
			ChannelID: channel, Timestamp: p.Thread.ID, Cursor: cursor, Limit: 200, IncludeAllMetadata: true,
		})
		if err != nil {
			return "", fmt.Errorf("conversations.replies: %w", err)
		}
		for _, m := range msgs {
			if m.Metadata.EventType == runProgressEvent && fmt.Sprint(m.Metadata.EventPayload["run_id"]) == string(p.Run.ID) {
				return m.Timestamp, nil
			}
		}
		if !more || next == "" {
			return "", nil
		}
		cursor = next
	}
	return "", nil
}

// runMessage is a run's progress message: its text and blocks.
func runMessage(p bot.RunProgress) (string, []slackapi.Block) {
	tasks := make([]planTask, len(p.Run.Cards))
	done := 0
	for i, c := range p.Run.Cards {
		status := bot.TaskStatusOf(c.Status, c.Error != "")
		if status == bot.TaskComplete {
			done++
		}
		details := c.Status
		if c.Assignee != "" {
			details = "Assignee: " + c.Assignee + " · " + c.Status
		}
		if c.Error != "" {
			details += "\nFailed: " + c.Error
		}
		tasks[i] = planTask{ID: taskID(string(c.Card), i), Title: c.Handle + " · " + c.Title, Details: details, Status: status}
	}
	title := fmt.Sprintf("Run %d of %s", p.Run.Number, p.BoardTitle)
	block, folded := planBlock("bobnet_run:"+string(p.Run.ID), title, tasks)
	blocks := []slackapi.Block{block}
	line := fmt.Sprintf("%d of %d cards done", done, len(p.Run.Cards))
	if folded > 0 {
		line += fmt.Sprintf(" · %d more cards not shown", folded)
	}
	if p.Ended {
		line = fmt.Sprintf("Run %d ended (%s): ", p.Run.Number, escape(p.Run.State)) + line
	}
	if p.EditionURL != "" {
		line += " · <" + p.EditionURL + "|Read the edition>"
	}
	blocks = append(blocks, contextBlock(line))
	return fallback(fmt.Sprintf("%s: %d of %d cards done", title, done, len(p.Run.Cards))), blocks
}
