package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// RunID identifies a run of a board: "run_" and 26 lower-case base32
// characters.
type RunID string

// ParseRunID checks that s is shaped like a run id.
func ParseRunID(s string) (RunID, error) {
	return parseID[RunID]("run", "run_", longIDChars, s)
}

// The states of a run.
const (
	RunRunning  = "running"
	RunDone     = "done"
	RunStopped  = "stopped"
	RunTimedOut = "timed_out"
)

// ErrRunGoing means the board has a run that has not ended: one run at a
// time per board.
var ErrRunGoing = errors.New("a run of this board is still going")

// ErrNotRunnable means a run card cannot take that step now (not in
// Review, the run ended, sent back too often, a lease another holds).
var ErrNotRunnable = errors.New("not possible in this run now")

// MaxOutput is the most a card's output may hold (256 KiB).
const MaxOutput = 256 << 10

// maxRounds is how often a card may be sent back in one run; maxAttempts
// how often a runner may try a card before the run stops.
const (
	maxRounds   = 3
	maxAttempts = 3
)

// Run is one run of a board.
type Run struct {
	ID        RunID      `json:"id"`
	Board     ID         `json:"board_id"`
	Number    int        `json:"number"`
	State     string     `json:"state"`
	StartedBy string     `json:"started_by"`
	Trigger   string     `json:"trigger"`
	StartedAt time.Time  `json:"started_at"`
	Deadline  time.Time  `json:"deadline"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Cards     []RunCard  `json:"cards"`
}

// RunCard is a card as one run works it.
type RunCard struct {
	Card      CardID   `json:"card_id"`
	Handle    string   `json:"handle"`
	Title     string   `json:"title"`
	Status    string   `json:"status"`
	Assignee  string   `json:"assignee"`
	Runner    string   `json:"runner"`
	Review    bool     `json:"review"`
	Output    string   `json:"output"`
	Attempts  int      `json:"attempts"`
	Rounds    int      `json:"rounds"`
	Feedback  string   `json:"feedback,omitempty"`
	Error     string   `json:"error,omitempty"`
	DependsOn []CardID `json:"depends_on"`
}

// RunStart says how to start a run.
type RunStart struct {
	Board   ID
	User    string
	Trigger string // manual, schedule or catch_up
	// Runner gives, for a card's assignee, who works the card ("model",
	// "hook:<name>" or "" for people) and whether its output goes to
	// Review before Done.
	Runner   func(assignee string) (runner string, review bool)
	Deadline time.Duration
}

const (
	lockBoard   = `SELECT id FROM boards WHERE id = $1 FOR UPDATE`
	runningRun  = `SELECT id FROM runs WHERE board_id = $1 AND state = 'running'`
	nextRunNum  = `SELECT coalesce(max(number), 0) + 1 FROM runs WHERE board_id = $1`
	insertRun   = `INSERT INTO runs (id, board_id, number, state, started_by, trigger, deadline) VALUES ($1, $2, $3, 'running', $4, $5, now() + $6::interval)`
	insertRunCd = `INSERT INTO run_cards (run_id, card_id, runner, review) VALUES ($1, $2, $3, $4)`
	insertRunAu = `INSERT INTO audit_events (actor, action, channel, board_id, detail) SELECT $1, $2, channel, id, $3 FROM boards WHERE id = $4`

	selectRun = `SELECT id, board_id, number, state, started_by, trigger, started_at, deadline, ended_at, reason FROM runs`

	selectRunCards = `SELECT rc.card_id, b.key || '-' || c.number, c.title, c.status, c.assignee, rc.runner, rc.review, rc.output,
    rc.attempts, rc.rounds, rc.feedback, rc.error,
    coalesce((SELECT array_agg(l.depends_on ORDER BY l.depends_on) FROM card_links l WHERE l.card_id = c.id), '{}')
FROM run_cards rc JOIN cards c ON c.id = rc.card_id JOIN boards b ON b.id = c.board_id
WHERE rc.run_id = $1 ORDER BY c.position, c.number`
)

// StartRun starts a run of a board: in one transaction it numbers the
// run, resets every card to its starting status (Ready without
// dependencies, else Backlog; each change audited and sent to the page as
// any card change is) and records who works each card. ErrRunGoing when
// a run has not ended; ErrNotFound without such a board.
func (s *Store) StartRun(ctx context.Context, st RunStart) (Run, error) {
	id := RunID(newID("run_"))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var b ID
		if err := tx.QueryRow(ctx, lockBoard, st.Board).Scan(&b); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("board %s: %w", st.Board, ErrNotFound)
		} else if err != nil {
			return err
		}
		var going RunID
		if err := tx.QueryRow(ctx, runningRun, st.Board).Scan(&going); err == nil {
			return fmt.Errorf("%w: %s", ErrRunGoing, going)
		} else if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, nextRunNum, st.Board).Scan(&n); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, insertRun, id, st.Board, n, st.User, st.Trigger, st.Deadline.String()); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "23505" {
				return ErrRunGoing
			}
			return err
		}
		rows, _ := tx.Query(ctx, selectCards, st.Board)
		cards, err := pgx.CollectRows(rows, scanCard)
		if err != nil {
			return err
		}
		rows, _ = tx.Query(ctx, selectLinks, st.Board)
		hasDeps := map[CardID]bool{}
		links, err := pgx.CollectRows(rows, pgx.RowToStructByPos[boardLink])
		if err != nil {
			return err
		}
		for _, l := range links {
			hasDeps[l.Card] = true
		}
		for _, c := range cards {
			start := "Ready"
			if hasDeps[c.ID] {
				start = "Backlog"
			}
			if c.Status != start {
				if _, err := changeCard(ctx, tx, CardChange{Card: c.ID, Actor: st.User, Via: "run", Status: &start}); err != nil {
					return err
				}
			}
			runner, review := "", true
			if st.Runner != nil {
				runner, review = st.Runner(c.Assignee)
			}
			if _, err := tx.Exec(ctx, insertRunCd, id, c.ID, runner, review); err != nil {
				return err
			}
		}
		detail, _ := json.Marshal(map[string]any{"run_id": id, "number": n, "trigger": st.Trigger})
		_, err = tx.Exec(ctx, insertRunAu, st.User, "run_started", detail, st.Board)
		return err
	})
	if err != nil {
		return Run{}, fmt.Errorf("start a run of %s: %w", st.Board, err)
	}
	return s.Run(ctx, id)
}

// boardLink is one row of selectLinks.
type boardLink struct {
	Card      CardID
	DependsOn CardID
}

// Run reads a run with its cards. ErrNotFound when there is none.
func (s *Store) Run(ctx context.Context, id RunID) (Run, error) {
	return s.readRun(ctx, selectRun+` WHERE id = $1`, id)
}

// RunByNumber reads a board's run by its number.
func (s *Store) RunByNumber(ctx context.Context, board ID, n int) (Run, error) {
	return s.readRun(ctx, selectRun+` WHERE board_id = $1 AND number = $2`, board, n)
}

// Runs lists a board's runs, the latest first, without their cards.
func (s *Store) Runs(ctx context.Context, board ID, limit int) ([]Run, error) {
	rows, _ := s.pool.Query(ctx, selectRun+` WHERE board_id = $1 ORDER BY number DESC LIMIT $2`, board, limit)
	runs, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		return nil, fmt.Errorf("runs of %s: %w", board, err)
	}
	return runs, nil
}

func (s *Store) readRun(ctx context.Context, q string, args ...any) (Run, error) {
	rows, _ := s.pool.Query(ctx, q, args...)
	r, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return Run{}, fmt.Errorf("run: %w", ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("run: %w", err)
	}
	rows, _ = s.pool.Query(ctx, selectRunCards, r.ID)
	r.Cards, err = pgx.CollectRows(rows, scanRunCard)
	if err != nil {
		return Run{}, fmt.Errorf("cards of run %s: %w", r.ID, err)
	}
	return r, nil
}

func scanRun(row pgx.CollectableRow) (Run, error) {
	var r Run
	err := row.Scan(&r.ID, &r.Board, &r.Number, &r.State, &r.StartedBy, &r.Trigger, &r.StartedAt, &r.Deadline, &r.EndedAt, &r.Reason)
	r.Cards = []RunCard{}
	return r, err
}

func scanRunCard(row pgx.CollectableRow) (RunCard, error) {
	var c RunCard
	err := row.Scan(&c.Card, &c.Handle, &c.Title, &c.Status, &c.Assignee, &c.Runner, &c.Review, &c.Output,
		&c.Attempts, &c.Rounds, &c.Feedback, &c.Error, &c.DependsOn)
	return c, err
}
