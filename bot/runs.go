package bot

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
)

// RunURL is the link to a run's page, the morning edition.
func RunURL(publicURL string, r board.Run) string {
	return fmt.Sprintf("%s/boards/%s/runs/%d", strings.TrimRight(publicURL, "/"), r.Board, r.Number)
}

// Started tells the board's thread that a run began.
func (e *Engine) Started(ctx context.Context, r board.Run) {
	why := ""
	switch r.Trigger {
	case "schedule":
		why = " on its schedule"
	case "catch_up":
		why = ", catching up on the slots missed while BobNet was down"
	}
	models := 0
	for _, c := range r.Cards {
		if c.Runner != "" {
			models++
		}
	}
	text := fmt.Sprintf("Run %d started%s by %s: %d cards, %d worked by runners, the rest by people.", r.Number, why, r.StartedBy, len(r.Cards), models)
	e.tellRun(ctx, r.Board, text, RunURL(e.cfg.PublicURL, r))
}

// Reviewing tells the board's thread that a runner's card waits for a
// person to accept it or send it back.
func (e *Engine) Reviewing(ctx context.Context, job board.RunJob, up board.CardUpdate) {
	text := fmt.Sprintf("%s “%s” is ready for review in run %d. Read it on the run page, then accept it or send it back with a reason (POST /api/v1/runs/%s/cards/%s/review).",
		up.Card.Handle, up.Card.Title, job.Run.Number, job.Run.ID, up.Card.Handle)
	e.tellRun(ctx, job.Run.Board, text, RunURL(e.cfg.PublicURL, job.Run))
}

// Ended tells the board's thread how a run ended.
func (e *Engine) Ended(ctx context.Context, r board.Run) {
	took := ""
	if r.EndedAt != nil {
		took = " in " + r.EndedAt.Sub(r.StartedAt).Round(time.Minute).String()
	}
	var text string
	switch r.State {
	case board.RunDone:
		text = fmt.Sprintf("Run %d done%s: %d cards. The edition is on the run page.", r.Number, took, len(r.Cards))
	case board.RunTimedOut:
		text = fmt.Sprintf("Run %d timed out%s.", r.Number, took)
	default:
		text = fmt.Sprintf("Run %d stopped%s: %s.", r.Number, took, r.Reason)
	}
	e.tellRun(ctx, r.Board, text, RunURL(e.cfg.PublicURL, r))
}

// tellRun posts a run's news in the thread where its board was made, off
// the caller's path.
func (e *Engine) tellRun(ctx context.Context, id board.ID, text, link string) {
	cs, err := e.cardStore()
	if err != nil {
		return
	}
	b, _, err := cs.Board(ctx, id)
	if err != nil {
		e.logger.Warn("tell run news", "board", id, "err", err)
		return
	}
	src, ch, ok := strings.Cut(b.Channel, ":")
	if !ok || ch == "" {
		return
	}
	t := Thread{Channel: Channel{Source: Source(src), ID: ch}, ID: b.Thread}
	r := Reply{Kind: ReplyInfo, Text: text, BoardURL: link}
	if !e.out.send(b.Channel, func(ctx context.Context) {
		if err := e.poster(t.Channel.Source).Reply(ctx, t, r); err != nil {
			e.logger.Warn("tell run news", "board", id, "err", err)
		}
	}) {
		e.logger.Warn("run news not told: the channel's outbound queue is full", "board", id)
	}
}
