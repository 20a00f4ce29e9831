package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// maxRounds is how often a card may be sent back in one run; maxAttempts
// how often a runner may try a card before the run stops.
const (
	maxRounds   = 3
	maxAttempts = 3
)

const (
	lockBoard = `SELECT id FROM boards WHERE id = $1 FOR UPDATE`
	// The board's lock (taken first) orders the numbers; the unique index
	// on running runs refuses a second one (23505).
	insertRun = `INSERT INTO runs (id, board_id, number, state, started_by, trigger, deadline)
SELECT $1, $2, coalesce(max(number), 0) + 1, 'running', $3, $4, now() + $5::interval FROM runs WHERE board_id = $2
RETURNING ` + runColumns
	// Every card back to its starting status, with the audit event and the
	// notification a card change gets (changeCard's, for many cards at
	// once), so the page shows the reset live.
	resetCardsForRun = `WITH want AS (
    SELECT c.id, c.number, c.status AS from_status,
        CASE WHEN EXISTS (SELECT 1 FROM card_links l WHERE l.card_id = c.id) THEN 'Backlog' ELSE 'Ready' END AS to_status
    FROM cards c WHERE c.board_id = $1 FOR UPDATE
), upd AS (
    UPDATE cards c SET status = w.to_status, version = c.version + 1, updated_at = now()
    FROM want w WHERE c.id = w.id AND w.from_status <> w.to_status
    RETURNING c.id, c.version, c.number, w.from_status, w.to_status
), aud AS (
    INSERT INTO audit_events (actor, action, channel, board_id, detail)
    SELECT $2, 'card_changed', b.channel, b.id, jsonb_build_object('card', u.id, 'handle', b.key || '-' || u.number, 'via', 'run',
        'changes', jsonb_build_array(jsonb_build_object('field', 'status', 'from', u.from_status, 'to', u.to_status)), 'version', u.version)
    FROM upd u JOIN boards b ON b.id = $1
    RETURNING id, detail->>'card' AS card
)
SELECT count(pg_notify('` + changesChannel + `', json_build_object('b', $1::text, 'c', card, 'a', id)::text)) FROM aud`
	// Who works each card, the run's cards read back from what was
	// inserted (the dependencies grouped once for the board, not looked up
	// card by card).
	insertRunCards = `WITH rc AS (
    INSERT INTO run_cards (run_id, card_id, runner, review)
    SELECT $1, c.id, coalesce(r.runner, $6), NOT coalesce(r.no_review, $7)
    FROM cards c LEFT JOIN unnest($3::text[], $4::text[], $5::bool[]) AS r(name, runner, no_review) ON r.name = lower(btrim(c.assignee))
    WHERE c.board_id = $2
    RETURNING card_id, runner, review, output, attempts, rounds, feedback, error
), deps AS (
    SELECT card_id, array_agg(depends_on ORDER BY depends_on) AS ids FROM card_links WHERE board_id = $2 GROUP BY card_id
)
SELECT ` + runCardFields + `, coalesce(d.ids, '{}')
FROM rc JOIN cards c ON c.id = rc.card_id JOIN boards b ON b.id = c.board_id LEFT JOIN deps d ON d.card_id = rc.card_id
ORDER BY c.position, c.number`
	insertRunAu = `INSERT INTO audit_events (actor, action, channel, board_id, detail) SELECT $1, $2, channel, id, $3 FROM boards WHERE id = $4`

	runColumns = `id, board_id, number, state, started_by, trigger, started_at, deadline, ended_at, reason`
	selectRun  = `SELECT ` + runColumns + ` FROM runs`

	// runCardFields and then the card's dependencies are what scanRunCard
	// reads, of rc (run_cards), c (cards) and b (boards).
	runCardFields = `rc.card_id, b.key || '-' || c.number, c.title, c.status, c.assignee, rc.runner, rc.review, rc.output,
    rc.attempts, rc.rounds, rc.feedback, rc.error`
	// cardDeps is card c's dependencies, sorted; empty without any.
	cardDeps       = `coalesce((SELECT array_agg(l.depends_on ORDER BY l.depends_on) FROM card_links l WHERE l.card_id = c.id), '{}')`
	runCardColumns = `SELECT ` + runCardFields + `, ` + cardDeps + `
FROM run_cards rc JOIN cards c ON c.id = rc.card_id JOIN boards b ON b.id = c.board_id`
	selectRunCards = runCardColumns + ` WHERE rc.run_id = $1 ORDER BY c.position, c.number`
	// A card of a run and the cards it depends on, for its runner.
	selectJobCards = runCardColumns + ` WHERE rc.run_id = $1
  AND (rc.card_id = $2 OR rc.card_id IN (SELECT depends_on FROM card_links WHERE card_id = $2))
ORDER BY c.position, c.number`
)

// StartRun starts a run of a board: in one transaction, sent as one
// batch, it numbers the run, resets every card to its starting status
// (Ready without dependencies, else Backlog; each change audited and sent
// to the page as any card change is) and records who works each card.
// ErrRunGoing when a run has not ended; ErrNotFound without such a board.
// The run and its cards come back from the inserts themselves.
func (s *Store) StartRun(ctx context.Context, st board.RunStart) (board.Run, error) {
	id := board.NewRunID()
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	started := queueStartRun(b, id, st)
	b.Queue("COMMIT")
	return started.result(st, id, s.pool.SendBatch(ctx, b).Close())
}

// startedRun is what a run's start reads back.
type startedRun struct {
	run   board.Run
	cards []board.RunCard
}

// queueStartRun queues StartRun's statements, without BEGIN and COMMIT,
// so a caller's transaction may hold them too.
func queueStartRun(b *pgx.Batch, id board.RunID, st board.RunStart) *startedRun {
	// Who works each assignee's cards goes with the batch, so the start
	// is one round trip.
	var names, runners []string
	var noReview []bool
	for name, r := range st.Runners.ByName {
		names, runners, noReview = append(names, plan.RunnerKey(name)), append(runners, r.Name), append(noReview, r.NoReview)
	}
	detail, _ := json.Marshal(map[string]any{"run_id": id, "trigger": st.Trigger})
	out := &startedRun{}
	b.Queue(lockBoard, st.Board).QueryRow(func(row pgx.Row) error {
		err := row.Scan(new(board.ID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("board %s: %w", st.Board, board.ErrNotFound)
		}
		return err
	})
	b.Queue(insertRun, id, st.Board, st.User, st.Trigger, st.Deadline.String()).Query(func(rows pgx.Rows) error {
		rs, err := pgx.CollectRows(rows, scanRun)
		if len(rs) == 1 {
			out.run = rs[0]
		}
		return err
	})
	b.Queue(resetCardsForRun, st.Board, st.User)
	b.Queue(insertRunCards, id, st.Board, names, runners, noReview, st.Runners.Others.Name, st.Runners.Others.NoReview).Query(func(rows pgx.Rows) (err error) {
		out.cards, err = pgx.CollectRows(rows, scanRunCard)
		return err
	})
	b.Queue(insertRunAu, st.User, "run_started", detail, st.Board)
	return out
}

// result is the started run, or what err (the batch's) says went wrong.
func (r *startedRun) result(st board.RunStart, id board.RunID, err error) (board.Run, error) {
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr) && pgErr.Code == "23505":
		return board.Run{}, fmt.Errorf("start a run of %s: %w", st.Board, board.ErrRunGoing)
	case errors.As(err, &pgErr) && pgErr.Code == "23503":
		return board.Run{}, fmt.Errorf("start a run of %s: board: %w", st.Board, board.ErrNotFound)
	case err != nil:
		return board.Run{}, fmt.Errorf("start a run of %s: %w", st.Board, err)
	case r.run.ID == "":
		return board.Run{}, fmt.Errorf("start a run of %s: run %s not read back", st.Board, id)
	}
	run := r.run
	run.Cards = r.cards
	return run, nil
}

// Run reads a run with its cards. ErrNotFound when there is none.
func (s *Store) Run(ctx context.Context, id board.RunID) (board.Run, error) {
	return s.readRun(ctx, selectRun+` WHERE id = $1`, id)
}

// RunByNumber reads a board's run by its number.
func (s *Store) RunByNumber(ctx context.Context, board board.ID, n int) (board.Run, error) {
	return s.readRun(ctx, selectRun+` WHERE board_id = $1 AND number = $2`, board, n)
}

// Runs lists a board's runs, the latest first, without their cards.
func (s *Store) Runs(ctx context.Context, board board.ID, limit int) ([]board.Run, error) {
	rows, _ := s.pool.Query(ctx, selectRun+` WHERE board_id = $1 ORDER BY number DESC LIMIT $2`, board, limit)
	runs, err := pgx.CollectRows(rows, scanRun)
	if err != nil {
		return nil, fmt.Errorf("runs of %s: %w", board, err)
	}
	return runs, nil
}

func (s *Store) readRun(ctx context.Context, q string, args ...any) (board.Run, error) {
	rows, _ := s.pool.Query(ctx, q, args...)
	r, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if errors.Is(err, pgx.ErrNoRows) {
		return board.Run{}, fmt.Errorf("run: %w", board.ErrNotFound)
	}
	if err != nil {
		return board.Run{}, fmt.Errorf("run: %w", err)
	}
	rows, _ = s.pool.Query(ctx, selectRunCards, r.ID)
	r.Cards, err = pgx.CollectRows(rows, scanRunCard)
	if err != nil {
		return board.Run{}, fmt.Errorf("cards of run %s: %w", r.ID, err)
	}
	return r, nil
}

func scanRun(row pgx.CollectableRow) (board.Run, error) {
	var r board.Run
	err := row.Scan(&r.ID, &r.Board, &r.Number, &r.State, &r.StartedBy, &r.Trigger, &r.StartedAt, &r.Deadline, &r.EndedAt, &r.Reason)
	r.Cards = []board.RunCard{}
	return r, err
}

func scanRunCard(row pgx.CollectableRow) (board.RunCard, error) {
	var c board.RunCard
	err := row.Scan(&c.Card, &c.Handle, &c.Title, &c.Status, &c.Assignee, &c.Runner, &c.Review, &c.Output,
		&c.Attempts, &c.Rounds, &c.Feedback, &c.Error, &c.DependsOn)
	return c, err
}
