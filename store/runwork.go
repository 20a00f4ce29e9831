package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"

	"github.com/jackc/pgx/v5"
)

const (
	// A card a runner may take: in a running run, its runner's, not held
	// (or held past its lease; a card parked while its channel's model
	// budget is spent is held by nobody until it may go again), with every
	// card it depends on Done, not yet in Review or Done, and tried fewer
	// than maxAttempts times. The runs take turns: the card comes from the
	// run whose latest claim is oldest (a run not yet claimed from first),
	// so a small run started after a big one is not queued behind it.
	// started_at is when the card's latest attempt started.
	//
	// A run past its deadline offers nothing while it waits for the
	// sweeper to time it out: a hook's card is held until the deadline,
	// and taking it again then sent a second card.dispatched of the
	// round.
	//
	// The card's row is locked with its run card's: a claim whose
	// snapshot predates another runner's claim and output would, locking
	// only the run card, find it free again (its output clears the lease)
	// and recheck only the run card's conditions, not the card's status
	// in its old snapshot, and work a Done card a second time in the
	// round (the soak saw it). Locked, the card's status is rechecked too.
	claimRunCard = `UPDATE run_cards rc SET lease_until = now() + $3::interval, attempts = rc.attempts + 1, holder = $4,
    started_at = now(), error = ''
FROM (SELECT rc2.run_id, rc2.card_id FROM run_cards rc2
      JOIN runs r ON r.id = rc2.run_id AND r.state = 'running' AND r.deadline > now()
      JOIN cards c ON c.id = rc2.card_id
      CROSS JOIN LATERAL (SELECT max(t.started_at) AS at FROM run_cards t WHERE t.run_id = r.id) turn
      WHERE rc2.runner = $1 AND c.status IN ('Backlog', 'Ready', 'In Progress')
        AND (rc2.lease_until IS NULL OR rc2.lease_until < now())
        AND rc2.attempts < $2
        AND NOT EXISTS (SELECT 1 FROM card_links l JOIN cards d ON d.id = l.depends_on
                        WHERE l.card_id = c.id AND d.status <> 'Done')
      ORDER BY turn.at NULLS FIRST, r.started_at, c.position, c.number
      LIMIT 1 FOR UPDATE OF rc2, c SKIP LOCKED) j
WHERE rc.run_id = j.run_id AND rc.card_id = j.card_id
RETURNING rc.run_id, rc.card_id, rc.attempts, rc.feedback`

	// claimAndStart takes a card (claimRunCard) and moves it to In
	// Progress with the audit event and notification any card change
	// gets (changeCard's, in one statement). The dependencies were found
	// Done by the taking itself.
	claimAndStart = `WITH job AS (` + claimRunCard + `),
upd AS (
    UPDATE cards c SET status = 'In Progress', version = c.version + 1, updated_at = now()
    FROM job JOIN cards o ON o.id = job.card_id
    WHERE c.id = o.id AND o.status <> 'In Progress'
    RETURNING c.id, c.board_id, c.number, c.version, o.status AS from_status
), aud AS (
    INSERT INTO audit_events (actor, action, channel, board_id, detail)
    SELECT $1, 'card_changed', b.channel, b.id, jsonb_build_object('card', u.id, 'handle', b.key || '-' || u.number, 'via', 'run',
        'changes', jsonb_build_array(jsonb_build_object('field', 'status', 'from', u.from_status, 'to', 'In Progress')), 'version', u.version)
    FROM upd u JOIN boards b ON b.id = u.board_id
    RETURNING id, board_id, detail->>'card' AS card
)
SELECT job.attempts, job.feedback,
    (SELECT count(pg_notify('` + changesChannel + `', json_build_object('b', board_id, 'c', card, 'a', id)::text)) FROM aud)
FROM job`

	// The card a holder took (run_cards_holder: at most one), in a
	// running run. holder <> '' names the partial index's condition, so
	// a plan made once for any $1 uses it too.
	heldBy = `(SELECT rc.run_id, rc.card_id FROM run_cards rc JOIN runs r ON r.id = rc.run_id
WHERE rc.holder = $1 AND rc.holder <> '' AND r.state = 'running')`
	// The card taken, the cards it depends on, its board and its run, in
	// one row.
	heldJob = `SELECT ` + cardFields + `, ` + cardDeps + `,
    b.name, b.goal, b.key, b.channel, b.thread, b.created_at,
    r.id, r.number, r.state, r.started_by, r.trigger, r.started_at, r.deadline, r.ended_at, r.reason
FROM ` + heldBy + ` h JOIN cards c ON c.id = h.card_id JOIN boards b ON b.id = c.board_id JOIN runs r ON r.id = h.run_id`
	heldJobCards = `WITH h AS MATERIALIZED ` + heldBy + `
` + runCardColumns + ` WHERE rc.run_id = (SELECT run_id FROM h)
  AND rc.card_id IN (SELECT card_id FROM h UNION ALL SELECT depends_on FROM card_links WHERE card_id = (SELECT card_id FROM h))
ORDER BY c.position, c.number`

	holdRunCard = `SELECT rc.review FROM run_cards rc JOIN runs r ON r.id = rc.run_id
WHERE rc.run_id = $1 AND rc.card_id = $2 AND r.state = 'running' AND rc.holder = $3 AND rc.lease_until IS NOT NULL
FOR UPDATE OF rc`
	saveRunOutput = `UPDATE run_cards SET output = $3, lease_until = NULL, finished_at = now() WHERE run_id = $1 AND card_id = $2`
	// A card given back untried (its channel's model budget is spent):
	// the attempt is not counted.
	releaseRunCard = `UPDATE run_cards SET lease_until = NULL, attempts = greatest(attempts - 1, 0), holder = ''
WHERE run_id = $1 AND card_id = $2 AND holder = $3 AND lease_until IS NOT NULL`
	// Then it and every other card of the runner in its run that is not
	// held are parked, held by nobody, for $3, so no runner takes them
	// (and gives them back) again before the budget may allow them, and
	// the runners work other runs' cards meanwhile. A card whose attempts
	// are spent is left to the sweep.
	parkRunCards = `UPDATE run_cards rc SET lease_until = now() + $3::interval, holder = ''
FROM cards c WHERE c.id = rc.card_id AND rc.run_id = $1 AND rc.runner = $2 AND rc.attempts < $4
  AND c.status IN ('Backlog', 'Ready', 'In Progress') AND (rc.lease_until IS NULL OR rc.lease_until < now())`
	renewRunCard = `UPDATE run_cards rc SET lease_until = now() + $4::interval FROM runs r
WHERE rc.run_id = $1 AND rc.card_id = $2 AND rc.holder = $3 AND rc.lease_until IS NOT NULL AND r.id = rc.run_id AND r.state = 'running'`
	failRunCard = `UPDATE run_cards SET error = $3, lease_until = NULL WHERE run_id = $1 AND card_id = $2 AND holder = $4 AND lease_until IS NOT NULL`

	// The replica that ends a run tells its thread at once; should it die
	// first, another tells it once end_tell_after has passed.
	endRun = `UPDATE runs SET state = $2, reason = $3, ended_at = now(), end_tell_after = now() + $4::interval
WHERE id = $1 AND state = 'running' RETURNING board_id, number`

	// Runs that have ended by themselves: every card Done; past the
	// deadline; a card its runner failed maxAttempts times, a lost lease
	// (the runner's replica restarted or died while it worked the card)
	// counting as a failed attempt: such a card can be taken no more, so
	// the run stops instead of waiting for its deadline.
	finishedRuns = `SELECT r.id, 'done', '' FROM runs r WHERE r.state = 'running'
  AND NOT EXISTS (SELECT 1 FROM run_cards rc JOIN cards c ON c.id = rc.card_id WHERE rc.run_id = r.id AND c.status <> 'Done')
UNION ALL
SELECT r.id, 'timed_out', 'the run passed its deadline' FROM runs r WHERE r.state = 'running' AND r.deadline < now()
UNION ALL
(SELECT DISTINCT ON (r.id) r.id, 'stopped', b.key || '-' || c.number || ' failed after ' || rc.attempts || ' attempts: ' ||
    CASE WHEN rc.lease_until IS NULL THEN rc.error
         ELSE 'its runner stopped while working it (its lease of the card ran out: a restart or a crash)' END
FROM runs r JOIN run_cards rc ON rc.run_id = r.id JOIN cards c ON c.id = rc.card_id JOIN boards b ON b.id = c.board_id
WHERE r.state = 'running' AND rc.runner <> '' AND rc.attempts >= $1
  AND (rc.lease_until IS NULL AND rc.error <> '' OR rc.lease_until < now() AND c.status IN ('Backlog', 'Ready', 'In Progress'))
ORDER BY r.id, c.position, c.number)`
)

// ClaimRunCard takes the next card the given runner ("model", "hook:x")
// may work, holds it for lease, and moves it to In Progress. ok is false
// when there is nothing to take. A runner that dies loses the card when
// the lease ends and another takes it; a card is tried at most three
// times.
//
// It is one batch: the taking and the card's change in one statement,
// then what the runner needs read back by the new holder, all in the
// batch's one implicit transaction.
func (s *Store) ClaimRunCard(ctx context.Context, runner string, lease time.Duration) (board.RunJob, bool, error) {
	job, ok, err := claimJob(ctx, s.pool, runner, lease)
	if err != nil {
		return board.RunJob{}, false, fmt.Errorf("claim a run card: %w", err)
	}
	return job, ok, nil
}

// batcher sends a batch: the pool (one implicit transaction) or a
// transaction of the caller's.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// claimJob is ClaimRunCard on q.
func claimJob(ctx context.Context, q batcher, runner string, lease time.Duration) (board.RunJob, bool, error) {
	job := board.RunJob{Holder: board.NewHolderID()}
	var run board.Run
	var cards []board.RunCard
	found := false
	b := &pgx.Batch{}
	b.Queue(claimAndStart, runner, maxAttempts, lease.String(), job.Holder).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			found = true
			if err := rows.Scan(&job.Attempt, &job.Feedback, nil); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	b.Queue(heldJob, job.Holder).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var deps []board.CardID
			card, err := scanCardAnd(rows, &deps, &job.Board.Name, &job.Board.Goal, &job.Board.Key, &job.Board.Channel, &job.Board.Thread, &job.Board.CreatedAt,
				&run.ID, &run.Number, &run.State, &run.StartedBy, &run.Trigger, &run.StartedAt, &run.Deadline, &run.EndedAt, &run.Reason)
			if err != nil {
				return err
			}
			card.DependsOn = deps
			job.Card = card
			job.Board.ID, run.Board = card.BoardID, card.BoardID
			run.Cards = []board.RunCard{}
		}
		return rows.Err()
	})
	b.Queue(heldJobCards, job.Holder).Query(func(rows pgx.Rows) (err error) {
		cards, err = pgx.CollectRows(rows, scanRunCard)
		return err
	})
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return board.RunJob{}, false, err
	}
	if !found {
		return board.RunJob{}, false, nil
	}
	if job.Card.ID == "" || run.ID == "" {
		return board.RunJob{}, false, fmt.Errorf("the card taken by %s was not read back", job.Holder)
	}
	job.Run = run
	return withJobCards(job, cards), true, nil
}

// withJobCards is job with its card as the run has it and, as its inputs,
// the cards it depends on, out of cards (the one and the others).
func withJobCards(job board.RunJob, cards []board.RunCard) board.RunJob {
	job.Inputs = nil
	for _, c := range cards {
		if c.Card == job.Card.ID {
			job.RunCard = c
		} else {
			job.Inputs = append(job.Inputs, c)
		}
	}
	return job
}

// CompleteRunCard keeps a runner's output for the card it holds and moves
// the card on: to Review, or to Done when its profile wants no review.
// ErrNotRunnable when the runner no longer holds it (another took it after
// its lease ended, or the run ended): a runner changes only its own card.
func (s *Store) CompleteRunCard(ctx context.Context, job board.RunJob, actor, output string) (board.CardUpdate, error) {
	run, card := job.Run.ID, job.Card.ID
	output = plan.Cut(output, board.MaxOutput, "")
	var up board.CardUpdate
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var review bool
		if err := tx.QueryRow(ctx, holdRunCard, run, card, job.Holder).Scan(&review); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: the card is not held by this runner", board.ErrNotRunnable)
		} else if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, saveRunOutput, run, card, output); err != nil {
			return err
		}
		next := "Review"
		if !review {
			next = "Done"
		}
		var err error
		up, err = changeCard(ctx, tx, board.CardChange{Card: card, Actor: actor, Via: "run", Status: &next})
		return err
	})
	if err != nil {
		return board.CardUpdate{}, fmt.Errorf("complete %s in run %s: %w", card, run, err)
	}
	return up, nil
}

// FailRunCard lets go of a card whose runner failed, keeping why; it is
// tried again until its attempts run out, and then the run stops.
func (s *Store) FailRunCard(ctx context.Context, job board.RunJob, why string) error {
	if _, err := s.pool.Exec(ctx, failRunCard, job.Run.ID, job.Card.ID, truncateError(why), job.Holder); err != nil {
		return fmt.Errorf("fail %s in run %s: %w", job.Card.ID, job.Run.ID, err)
	}
	return nil
}

// ReleaseRunCard gives back a card its runner took but did not work (the
// channel's model budget is spent): no attempt is counted, and the card,
// with every other card of the same runner in its run that no runner
// holds, waits wait before a runner takes it again: the runners meanwhile
// work other runs' cards instead of taking and giving back these.
func (s *Store) ReleaseRunCard(ctx context.Context, job board.RunJob, wait time.Duration) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, releaseRunCard, job.Run.ID, job.Card.ID, job.Holder)
		if err != nil || tag.RowsAffected() == 0 {
			return err // not held by this runner any more: nothing to give back
		}
		_, err = tx.Exec(ctx, parkRunCards, job.Run.ID, job.RunCard.Runner, wait.String(), maxAttempts)
		return err
	})
	if err != nil {
		return fmt.Errorf("release %s in run %s: %w", job.Card.ID, job.Run.ID, err)
	}
	return nil
}

// RenewRunCard holds job's card for lease from now on, so a runner still
// working is not taken over; ErrNotRunnable when its holder lost it (its
// lease passed and another took it, or the run ended).
func (s *Store) RenewRunCard(ctx context.Context, job board.RunJob, lease time.Duration) error {
	tag, err := s.pool.Exec(ctx, renewRunCard, job.Run.ID, job.Card.ID, job.Holder, lease.String())
	if err != nil {
		return fmt.Errorf("renew %s in run %s: %w", job.Card.ID, job.Run.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("renew %s in run %s: %w", job.Card.ID, job.Run.ID, board.ErrNotRunnable)
	}
	return nil
}

// StopRun ends a running run as stopped. ErrNotRunnable when it has
// ended already.
func (s *Store) StopRun(ctx context.Context, id board.RunID, user string) (board.Run, error) {
	if err := s.endRun(ctx, id, board.RunStopped, "stopped by "+user, user); err != nil {
		return board.Run{}, err
	}
	return s.Run(ctx, id)
}

func (s *Store) endRun(ctx context.Context, id board.RunID, state, reason, actor string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var b board.ID
		var n int
		if err := tx.QueryRow(ctx, endRun, id, state, reason, RetellRunEndAfter).Scan(&b, &n); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w: it has ended", id, board.ErrNotRunnable)
		} else if err != nil {
			return fmt.Errorf("end run %s: %w", id, err)
		}
		detail, _ := json.Marshal(map[string]any{"run_id": id, "number": n, "state": state, "reason": reason})
		_, err := tx.Exec(ctx, insertRunAu, actor, "run_finished", detail, b)
		return err
	})
}

// SweepRuns ends the runs that have ended by themselves (every card Done,
// past the deadline, a card failed too often) and returns them; each is
// ended once whichever replica sweeps.
func (s *Store) SweepRuns(ctx context.Context) ([]board.Run, error) {
	rows, _ := s.pool.Query(ctx, finishedRuns, maxAttempts)
	type ending struct {
		ID            board.RunID
		State, Reason string
	}
	ends, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ending])
	if err != nil {
		return nil, fmt.Errorf("sweep runs: %w", err)
	}
	var out []board.Run
	seen := map[board.RunID]bool{}
	for _, e := range ends {
		if seen[e.ID] {
			continue
		}
		seen[e.ID] = true
		if err := s.endRun(ctx, e.ID, e.State, e.Reason, "bobnet"); errors.Is(err, board.ErrNotRunnable) {
			continue // another replica ended it
		} else if err != nil {
			return out, err
		}
		r, err := s.Run(ctx, e.ID)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}
