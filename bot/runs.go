package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/planner"
)

// RunStore starts, lists and reviews runs and keeps schedules;
// *store.Store is one.
type RunStore interface {
	StartRun(ctx context.Context, st board.RunStart) (board.Run, error)
	Run(ctx context.Context, id board.RunID) (board.Run, error)
	ReviewRunCard(ctx context.Context, run board.RunID, card board.CardID, round int, user string, accept bool, reason string) (board.CardUpdate, error)
	Runs(ctx context.Context, id board.ID, limit int) ([]board.Run, error)
	BoardByKey(ctx context.Context, tenant board.Tenant, key string) (board.Board, error)
	SetSchedule(ctx context.Context, sc board.Schedule) error
	DeleteSchedule(ctx context.Context, id board.ID, user string) error
	ScheduleOf(ctx context.Context, id board.ID) (board.Schedule, error)
	RunEndTold(ctx context.Context, id board.RunID) error
}

// ErrNoRuns means this BobNet was started without runs.
var ErrNoRuns = errors.New("this BobNet does not run boards")

// StartRun starts a run of a board from chat (`run NEWS`, or `run` for
// the channel's board) and tells the board's thread. Errors: ErrNotFound,
// board.ErrRunGoing, ErrNoRuns, ErrUnavailable.
func (e *Engine) StartRun(ctx context.Context, ch board.Channel, user, ref string) (board.Run, error) {
	b, err := e.runBoard(ctx, ch, ref)
	if err != nil {
		return board.Run{}, err
	}
	r, err := e.deps.Runs.StartRun(ctx, board.RunStart{
		Board: b.ID, User: user, Trigger: "manual", Deadline: e.cfg.RunDeadline,
		Runners: planner.RunnersOf(e.cfg.Profiles),
	})
	switch {
	case errors.Is(err, board.ErrRunGoing), errors.Is(err, board.ErrNotFound):
		return board.Run{}, err
	case err != nil:
		return board.Run{}, unavailable("start a run", err)
	}
	e.Started(ctx, r)
	return r, nil
}

// RecentRuns lists a board's latest runs for chat (`runs NEWS`).
func (e *Engine) RecentRuns(ctx context.Context, ch board.Channel, ref string) (board.Board, []board.Run, error) {
	b, err := e.runBoard(ctx, ch, ref)
	if err != nil {
		return board.Board{}, nil, err
	}
	runs, err := e.deps.Runs.Runs(ctx, b.ID, 5)
	if err != nil {
		return board.Board{}, nil, unavailable("list runs", err)
	}
	return b, runs, nil
}

// RunsText says a board's latest runs in a few lines, for chat.
func RunsText(publicURL string, b board.Board, runs []board.Run) string {
	if len(runs) == 0 {
		return fmt.Sprintf("%s (%s) has not run yet. Start one with `run %s`.", b.Name, b.Key, b.Key)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Latest runs of %s (%s):", b.Name, b.Key)
	for _, r := range runs {
		fmt.Fprintf(&sb, "\n• Run %d: %s, started %s by %s — %s", r.Number, r.State, r.StartedAt.UTC().Format("2 Jan 15:04 UTC"), r.StartedBy, RunURL(publicURL, r))
	}
	return sb.String()
}

// RunURL is the link to a run's page, the morning edition.
func RunURL(publicURL string, r board.Run) string {
	return fmt.Sprintf("%s/boards/%s/runs/%d", strings.TrimRight(publicURL, "/"), r.Board, r.Number)
}

// Started tells the board's thread that a run began.
func (e *Engine) Started(ctx context.Context, r board.Run) {
	why := " by " + r.StartedBy
	switch r.Trigger {
	case "schedule":
		why = " on its schedule"
	case "catch_up":
		why = " on its schedule, catching up on what BobNet missed while it was down"
	}
	models := 0
	for _, c := range r.Cards {
		if c.Runner != "" {
			models++
		}
	}
	text := fmt.Sprintf("Run %d started%s: %d cards, %d worked by runners, the rest by people.", r.Number, why, len(r.Cards), models)
	e.runNews(ctx, EventRunStarted, r, text)
}

// Reviewing tells the board's thread that a runner's card waits for a
// person to accept it or send it back, and how. The reply names the card
// (Reply.Review), so posters that can draw Accept / Send back controls do;
// its text says the commands for the rest.
func (e *Engine) Reviewing(ctx context.Context, job board.RunJob, up board.CardUpdate) {
	h := up.Card.Handle
	ref := &board.ReviewRef{Run: job.Run.ID, Card: up.Card.ID, Handle: h, Round: job.RunCard.Rounds}
	e.tellReview(ctx, job.Run.Board, func(src board.Source) string {
		how := fmt.Sprintf("POST /api/v1/runs/%s/cards/%s/review", job.Run.ID, h)
		switch src {
		case board.SourceSlack:
			how = fmt.Sprintf("the buttons, or `/bobnet accept %s` or `/bobnet sendback %s <why>`", h, h)
		case board.SourceMatrix:
			how = fmt.Sprintf("react ✅ to accept or ↩️ to send back, or say !bobnet accept %s or !bobnet sendback %s <why>", h, h)
		case board.SourceConsole:
			how = "the buttons below"
		}
		return fmt.Sprintf("%s “%s” is ready for review in run %d: read it on the run page, then accept it or send it back with a reason (%s).",
			h, up.Card.Title, job.Run.Number, how)
	}, RunURL(e.cfg.PublicURL, job.Run), ref)
}

// Ended tells the board's thread how a run ended, emits run.finished, and
// records that the end was told once it was.
func (e *Engine) Ended(ctx context.Context, r board.Run) {
	b, ok := e.newsBoard(ctx, r.Board)
	if !ok {
		return
	}
	e.tellOnThen(b, func(board.Source) string { return endText(r) }, RunURL(e.cfg.PublicURL, r), nil, e.endTold(r.ID))
	e.showRun(r.ID, b)
	e.emitRun(ctx, EventRunFinished, r, b)
}

// RetellEnded tells the thread how a run ended when the replica that
// ended it did not record telling it (it died in between, or every try
// was refused); run.finished was emitted with the end.
func (e *Engine) RetellEnded(ctx context.Context, r board.Run) {
	if b, ok := e.newsBoard(ctx, r.Board); ok {
		e.tellOnThen(b, func(board.Source) string { return endText(r) }, RunURL(e.cfg.PublicURL, r), nil, e.endTold(r.ID))
		e.showRun(r.ID, b)
	}
}

// endTold records that run id's end was told.
func (e *Engine) endTold(id board.RunID) func(context.Context) {
	return func(ctx context.Context) {
		if err := e.deps.Runs.RunEndTold(ctx, id); err != nil {
			e.logger.Warn("record a run's end told", "run", id, "err", err)
		}
	}
}

// endText says how a run ended.
func endText(r board.Run) string {
	took := ""
	if r.EndedAt != nil {
		took = " in " + r.EndedAt.Sub(r.StartedAt).Round(time.Minute).String()
	}
	switch r.State {
	case board.RunDone:
		return fmt.Sprintf("Run %d done%s: %d cards. The edition is on the run page.", r.Number, took, len(r.Cards))
	case board.RunTimedOut:
		return fmt.Sprintf("Run %d timed out%s.", r.Number, took)
	}
	return fmt.Sprintf("Run %d stopped%s: %s.", r.Number, took, r.Reason)
}

// tellRun posts a run's news in the thread where its board was made, off
// the caller's path.
func (e *Engine) tellRun(ctx context.Context, id board.ID, text, link string) {
	e.tellRunTo(ctx, id, func(board.Source) string { return text }, link)
}

// tellRunTo is tellRun with text said as fits the thread's platform.
func (e *Engine) tellRunTo(ctx context.Context, id board.ID, text func(board.Source) string, link string) {
	e.tellReview(ctx, id, text, link, nil)
}

// tellReview is tellRunTo with the card under review named on the reply
// (nil: news about no review).
func (e *Engine) tellReview(ctx context.Context, id board.ID, text func(board.Source) string, link string, ref *board.ReviewRef) {
	if b, ok := e.newsBoard(ctx, id); ok {
		e.tellOn(b, text, link, ref)
	}
}

// newsBoard reads the board a run's news is about; false (logged) when
// it cannot be read. The news is of something committed already, so the
// read does not end with the caller's context (a runs worker stopping for
// shutdown just after a card went to Review): it has emitTimeout, and
// ends when the engine halts; the news then joins the thread's queue,
// which a stopping engine still posts.
func (e *Engine) newsBoard(ctx context.Context, id board.ID) (board.Board, bool) {
	cs, err := e.cardStore()
	if err != nil {
		return board.Board{}, false
	}
	ctx, done := e.out.detached(ctx)
	defer done()
	ctx, cancel := context.WithTimeout(ctx, emitTimeout)
	defer cancel()
	b, _, err := cs.Board(ctx, id)
	if err != nil {
		e.logger.Warn("tell run news", "board", id, "err", err)
		return board.Board{}, false
	}
	return b, true
}

// tellOn posts news in b's thread, off the caller's path.
func (e *Engine) tellOn(b board.Board, text func(board.Source) string, link string, ref *board.ReviewRef) {
	e.tellOnThen(b, text, link, ref, nil)
}

// tellOnThen is tellOn calling told (when not nil) once the news is
// posted.
func (e *Engine) tellOnThen(b board.Board, text func(board.Source) string, link string, ref *board.ReviewRef, told func(context.Context)) {
	ch := channelOf(b.Channel)
	if ch.ID == "" {
		if told != nil { // a board with no thread: nothing to tell
			ctx, cancel := context.WithTimeout(context.Background(), emitTimeout)
			defer cancel()
			told(ctx)
		}
		return
	}
	t := board.Thread{Channel: ch, ID: b.Thread}
	r := board.Reply{Kind: board.ReplyInfo, Text: text(ch.Source), BoardURL: link, Review: ref}
	if err := e.out.send(b.Channel, func(ctx context.Context) {
		if err := e.tellTries(ctx, ch.Source, t, r); err != nil {
			e.logger.Warn("tell run news", "board", b.ID, "err", err)
		} else if told != nil {
			told(ctx)
		}
	}); err != nil {
		e.logger.Warn("run news not told: "+err.Error(), "board", b.ID)
	}
}

// tellTries posts r, trying again as an answer's post is tried
// (postAttempts, a little later each time) when the chat platform
// refuses: a run's start, end or review said once and lost to one 500
// leaves a thread that never hears how its run went.
func (e *Engine) tellTries(ctx context.Context, src board.Source, t board.Thread, r board.Reply) error {
	var err error
	for attempt := range postAttempts {
		if attempt > 0 {
			if e.out.stopping() {
				return err
			}
			select {
			case <-ctx.Done():
				return err
			case <-time.After(time.Duration(attempt) * 200 * time.Millisecond):
			}
		}
		if err = e.poster(src).Reply(ctx, t, r); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// runNews tells r's board's thread text and emits r's event, from one
// read of the board.
func (e *Engine) runNews(ctx context.Context, typ EventType, r board.Run, text string) {
	b, ok := e.newsBoard(ctx, r.Board)
	if !ok {
		return
	}
	e.tellOn(b, func(board.Source) string { return text }, RunURL(e.cfg.PublicURL, r), nil)
	e.showRun(r.ID, b)
	e.emitRun(ctx, typ, r, b)
}

// Skipped tells the board's thread that a scheduled slot did not start a
// run, and why.
func (e *Engine) Skipped(ctx context.Context, id board.ID, slot time.Time, why string) {
	e.tellRun(ctx, id, fmt.Sprintf("The run scheduled for %s was skipped: %s.", slot.Format("Mon 2 Jan 15:04 MST"), why), board.BoardURL(e.cfg.PublicURL, id))
}

// runWaitRate is how often one run's thread hears that it waits.
var runWaitRate = board.RateLimit{N: 1, Per: time.Hour}

// Waiting tells the board's thread that a run waits for the channel's
// model budget, once an hour at most whichever replica notices.
func (e *Engine) Waiting(ctx context.Context, job board.RunJob, why error) {
	if ok, err := e.deps.Requests.Allow(ctx, "run-waits:"+string(job.Run.ID), runWaitRate); err != nil || !ok {
		return
	}
	text := fmt.Sprintf("Run %d waits: %s. It goes on by itself once the model may be asked again.", job.Run.Number, strings.TrimPrefix(why.Error(), ErrOverBudget.Error()+": "))
	if errors.Is(why, ErrOverBudget) {
		text = fmt.Sprintf("Run %d waits: this channel has used its model budget for today (%s). It goes on by itself when the budget resets; an admin can raise budget.tokens_per_day.", job.Run.Number, strings.TrimPrefix(why.Error(), ErrOverBudget.Error()+": "))
	}
	e.tellRun(ctx, job.Run.Board, text, RunURL(e.cfg.PublicURL, job.Run))
}
