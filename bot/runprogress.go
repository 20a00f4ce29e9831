package bot

import (
	"context"
	"sync"
	"time"

	"github.com/bobnet/bobnet/board"
)

// RunProgressEvery is how often at most a run's progress is shown: the
// changes of a run in between are coalesced into the next call.
const RunProgressEvery = time.Second

// runShows coalesces the progress of the runs this replica changes into
// calls of their surfaces' RunShower (Registration.Runs). A call goes
// through the board's channel's outbound queue, so a slow or failing
// surface never holds a runner, and calls for one run come in order
// after the run's news queued before them ("Run N started"). Each call
// reads the run as it is then, so however changes are coalesced the
// last call shows the last state.
type runShows struct {
	mu sync.Mutex
	m  map[board.RunID]*runShow
}

// runShow is one run with a call queued, waiting for its time, or made
// within the last RunProgressEvery.
type runShow struct {
	b       board.Board
	pending bool
	last    time.Time
}

func newRunShows() *runShows { return &runShows{m: map[board.RunID]*runShow{}} }

// showRun shows run id of board b as it is now, within about a second.
func (e *Engine) showRun(id board.RunID, b board.Board) {
	ch := channelOf(b.Channel)
	if ch.ID == "" || e.deps.Runs == nil || e.registration(ch.Source).Runs == nil {
		return
	}
	s := e.shows
	s.mu.Lock()
	defer s.mu.Unlock()
	sh := s.m[id]
	if sh == nil {
		sh = &runShow{}
		s.m[id] = sh
	}
	sh.b = b
	if sh.pending {
		return // the call waiting reads the run as it is then
	}
	sh.pending = true
	if wait := time.Until(sh.last.Add(RunProgressEvery)); wait > 0 {
		time.AfterFunc(wait, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			e.queueRunShow(id, sh)
		})
		return
	}
	e.queueRunShow(id, sh)
}

// queueRunShow queues sh's call in its board's channel; shows.mu is
// held.
func (e *Engine) queueRunShow(id board.RunID, sh *runShow) {
	b := sh.b
	if err := e.out.send(b.Channel, func(ctx context.Context) { e.runProgress(ctx, id) }); err != nil {
		sh.pending = false
		e.logger.Warn("run progress not shown: "+err.Error(), "run", id, "board", b.ID)
	}
}

// runProgress reads run id and shows it.
func (e *Engine) runProgress(ctx context.Context, id board.RunID) {
	s := e.shows
	s.mu.Lock()
	sh := s.m[id]
	sh.pending, sh.last = false, time.Now()
	b := sh.b
	s.mu.Unlock()
	// Forgotten once a call could come at once again, unless another
	// change is waiting by then.
	time.AfterFunc(RunProgressEvery, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if cur := s.m[id]; cur == sh && !sh.pending && time.Since(sh.last) >= RunProgressEvery {
			delete(s.m, id)
		}
	})
	ch := channelOf(b.Channel)
	shower := e.registration(ch.Source).Runs
	if shower == nil {
		return
	}
	r, err := e.deps.Runs.Run(ctx, id)
	if err != nil {
		e.logger.Warn("read a run to show its progress", "run", id, "err", err)
		return
	}
	p := RunProgress{Thread: board.Thread{Channel: ch, ID: b.Thread}, BoardTitle: b.Name, Run: r,
		EditionURL: RunURL(e.cfg.PublicURL, r), Ended: r.State != board.RunRunning}
	if err := shower.RunProgress(ctx, p); err != nil {
		e.logger.Warn("show run progress", "run", id, "board", b.ID, "err", err)
	}
}

// RunCardMoved shows that a card of job's run moved: its runner took it
// (In Progress) or failed it. It is called after the change is committed.
func (e *Engine) RunCardMoved(_ context.Context, job board.RunJob) {
	e.showRun(job.Run.ID, job.Board)
}

// cardMoved shows the running run of up's board, if it has one, after a
// person moved one of its cards; the run is looked up off the caller's
// path, in the board's channel's queue.
func (e *Engine) cardMoved(up board.CardUpdate) {
	ch := channelOf(up.Board.Channel)
	if ch.ID == "" || e.deps.Runs == nil || e.registration(ch.Source).Runs == nil {
		return
	}
	if err := e.out.send(up.Board.Channel, func(ctx context.Context) {
		runs, err := e.deps.Runs.Runs(ctx, up.Board.ID, 1)
		if err != nil {
			e.logger.Warn("read a board's run to show its progress", "board", up.Board.ID, "err", err)
			return
		}
		if len(runs) == 1 && runs[0].State == board.RunRunning {
			e.showRun(runs[0].ID, up.Board)
		}
	}); err != nil {
		e.logger.Warn("run progress not shown: "+err.Error(), "board", up.Board.ID)
	}
}
