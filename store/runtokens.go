package store

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"

	"github.com/jackc/pgx/v5"
)

// maxRunError is how much of a failed attempt's reason is kept.
const maxRunError = 2000

const (
	// setRunToken gives a dispatched card its token and holds it until
	// the run's deadline: a tool that never answers keeps the card until
	// the run times out.
	setRunToken = `UPDATE run_cards rc SET token_hash = $3, lease_until = r.deadline
FROM runs r WHERE r.id = rc.run_id AND rc.run_id = $1 AND rc.card_id = $2`
	selectTokenScope = `SELECT rc.run_id, rc.card_id, b.key || '-' || c.number, rc.runner, rc.token_hash
FROM run_cards rc JOIN cards c ON c.id = rc.card_id JOIN boards b ON b.id = c.board_id WHERE rc.token_hash = $1`
	holdTokenCard = `SELECT r.state, rc.review, rc.holder, rc.lease_until IS NOT NULL, c.status, coalesce(rc.token_hash, ''::bytea)
FROM run_cards rc JOIN runs r ON r.id = rc.run_id JOIN cards c ON c.id = rc.card_id
WHERE rc.run_id = $1 AND rc.card_id = $2 FOR UPDATE OF rc`
)

// DispatchRunCard takes the next card of runner (a "hook:<name>") as
// ClaimRunCard does and, in the same transaction, keeps the hash of the
// token dispatch gives it (an earlier token of the card is refused from
// then on) and writes the outbox rows dispatch makes of it, so the card
// is dispatched exactly once per round however many replicas look: the
// dispatch is the work the claim guards. The card stays held until the
// run's deadline or its output. When dispatch fails (the hook has no
// callbacks), the attempt fails with its reason, as a runner's would; the
// error then wraps ErrNotRunnable and job is the card not dispatched.
func (s *Store) DispatchRunCard(ctx context.Context, runner string, dispatch func(job board.RunJob) (token string, evs []board.OutboundEvent, err error)) (job board.RunJob, ok bool, err error) {
	var undeliverable error
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		// The lease is the run's deadline, set below with the token; the
		// claim's own lease only has to outlive the transaction.
		var err error
		if job, ok, err = claimJob(ctx, tx, runner, time.Hour); err != nil || !ok {
			return err
		}
		runID, cardID := job.Run.ID, job.Card.ID
		token, evs, err := dispatch(job)
		if err == nil && len(evs) == 0 {
			err = fmt.Errorf("%s has no callbacks to send the card to", runner)
		}
		if err != nil {
			undeliverable = err
			_, err = tx.Exec(ctx, failRunCard, runID, cardID, truncateError(err.Error()), job.Holder)
			return err
		}
		if _, err := tx.Exec(ctx, setRunToken, runID, cardID, board.HashRunToken(token)); err != nil {
			return err
		}
		return InsertEvents(ctx, tx, evs)
	})
	switch {
	case err != nil:
		return board.RunJob{}, false, fmt.Errorf("dispatch a run card: %w", err)
	case undeliverable != nil:
		return job, true, fmt.Errorf("dispatch %s in run %s: %w: %w", job.Card.Handle, job.Run.ID, board.ErrNotRunnable, undeliverable)
	}
	return job, ok, nil
}

// RunTokenScope finds the card a token was issued for. ErrRunToken when
// no card has it.
func (s *Store) RunTokenScope(ctx context.Context, token string) (board.TokenScope, error) {
	want := board.HashRunToken(token)
	var sc board.TokenScope
	var got []byte
	err := s.pool.QueryRow(ctx, selectTokenScope, want).Scan(&sc.Run, &sc.Card, &sc.Handle, &sc.Runner, &got)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return board.TokenScope{}, board.ErrRunToken
	case err != nil:
		return board.TokenScope{}, fmt.Errorf("card token: %w", err)
	case subtle.ConstantTimeCompare(got, want) != 1:
		return board.TokenScope{}, board.ErrRunToken
	}
	return sc, nil
}

// PostRunOutput keeps the output a tool posted for the card it was
// dispatched and moves the card on (see RunOutput.Status), or, for a
// failed attempt, lets go of the card with the reason. It returns the job
// as it is now (the run without its cards, the card and its run card) and
// the card's change (none for a failed attempt). ErrRunToken when the
// token is not the card's current one; ErrNotRunnable when the run has
// ended or the card is not waiting for an output.
func (s *Store) PostRunOutput(ctx context.Context, o board.RunOutput) (board.RunJob, board.CardUpdate, error) {
	var job board.RunJob
	var up board.CardUpdate
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var state, status string
		var review, held bool
		var hash []byte
		err := tx.QueryRow(ctx, holdTokenCard, o.Run, o.Card).Scan(&state, &review, &job.Holder, &held, &status, &hash)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("card %s in run %s: %w", o.Card, o.Run, board.ErrNotFound)
		case err != nil:
			return err
		case subtle.ConstantTimeCompare(hash, o.TokenHash) != 1:
			return board.ErrRunToken
		case state != board.RunRunning:
			return fmt.Errorf("%w: the run has ended (%s)", board.ErrNotRunnable, state)
		case !held || status != "In Progress":
			return fmt.Errorf("%w: the card is not waiting for an output (it is in %s)", board.ErrNotRunnable, status)
		}
		if o.Status == "failed" {
			_, err := tx.Exec(ctx, failRunCard, o.Run, o.Card, truncateError(o.Output), job.Holder)
			return err
		}
		output := plan.Cut(o.Output, board.MaxOutput, "")
		if _, err := tx.Exec(ctx, saveRunOutput, o.Run, o.Card, output); err != nil {
			return err
		}
		next := "Review"
		if !review && o.Status != "review" {
			next = "Done"
		}
		up, err = changeCard(ctx, tx, board.CardChange{Card: o.Card, Actor: o.Actor, Via: "run", Status: &next})
		if err != nil {
			return err
		}
		detail, _ := json.Marshal(map[string]any{"run_id": o.Run, "card": o.Card, "runner": o.Actor, "status": next, "bytes": len(output)})
		_, err = tx.Exec(ctx, insertRunAu, o.Actor, "run_card_output", detail, up.Card.BoardID)
		return err
	})
	if err != nil {
		return board.RunJob{}, board.CardUpdate{}, fmt.Errorf("output of %s in run %s: %w", o.Card, o.Run, err)
	}
	card, err := readCard(ctx, s.pool, selectCard, o.Card)
	if err != nil {
		return board.RunJob{}, board.CardUpdate{}, fmt.Errorf("output of %s in run %s: %w", o.Card, o.Run, err)
	}
	job.Card = card
	b := &job.Board
	if err := s.pool.QueryRow(ctx, selectBoard, card.BoardID).Scan(&b.ID, &b.Name, &b.Goal, &b.Key, &b.Channel, &b.Thread, &b.CreatedAt); err != nil {
		return board.RunJob{}, board.CardUpdate{}, fmt.Errorf("board of %s: %w", o.Card, err)
	}
	job, _, err = fillJob(ctx, s.pool, job, o.Run)
	return job, up, err
}

// truncateError keeps the start of a failure's reason.
func truncateError(s string) string {
	return plan.Cut(strings.TrimSpace(s), maxRunError, "")
}

// fillJob reads, on q (a transaction), the run of a job (without its
// other cards) and the outputs of the cards the job's card depends on.
func fillJob(ctx context.Context, q querier, job board.RunJob, runID board.RunID) (board.RunJob, bool, error) {
	rows, _ := q.Query(ctx, selectRun+` WHERE id = $1`, runID)
	run, err := pgx.CollectExactlyOneRow(rows, scanRun)
	if err != nil {
		return board.RunJob{}, false, fmt.Errorf("run %s: %w", runID, err)
	}
	rows, _ = q.Query(ctx, selectJobCards, runID, job.Card.ID)
	cards, err := pgx.CollectRows(rows, scanRunCard)
	if err != nil {
		return board.RunJob{}, false, fmt.Errorf("cards of run %s: %w", runID, err)
	}
	job.Run = run
	return withJobCards(job, cards), true, nil
}
