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
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// lockChain serialises executions of every version of one request:
	// the first writes, the rest find its result (or its sibling's) below.
	lockChain = `SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`

	// selectProposalForExecute always returns one row: this proposal's
	// state and result (NULL when Postgres has no record yet) and another
	// version of the same chain that was already approved, if any.
	selectProposalForExecute = `SELECT (SELECT state FROM proposals WHERE id = $1), (SELECT result FROM proposals WHERE id = $1),
    coalesce((SELECT id FROM proposals WHERE chain = $2 AND state = 'approved' AND id <> $1 LIMIT 1), '')`

	selectChannelBoardID = `SELECT board_id FROM channel_bindings WHERE channel = $1`

	// Locking the target board serializes card additions to it, so the
	// numbers they take from the board's highest do not collide.
	lockBoardNextNumber = `SELECT coalesce((SELECT max(number) FROM cards WHERE board_id = b.id), 0) + 1
FROM boards b WHERE b.id = $1 FOR UPDATE`

	upsertPlannedSchedule = `INSERT INTO schedules (board_id, cron, timezone, set_by, last_slot) VALUES ($1, $2, $3, $4, now())
ON CONFLICT (board_id) DO UPDATE SET cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, set_by = EXCLUDED.set_by, last_slot = EXCLUDED.last_slot`

	insertBoards = `INSERT INTO boards (id, name, goal, key, channel, proposal_id, thread)
SELECT r.id, r.name, r.goal, bobnet_board_key(bobnet_tenant($2), r.key), $2, $3, $4 FROM jsonb_to_recordset($1::jsonb) AS r(id text, name text, goal text, key text)`

	// insertCards and insertLinks take one array per column: a 64-card
	// plan is one statement, and Postgres reads arrays faster than JSON.
	insertCards = `INSERT INTO cards (id, board_id, position, number, temp_id, title, body, assignee, status,
    workspace_mode, acceptance_criteria, suggested_skills, notes, proposal_id)
SELECT u.id, u.board_id, u.position, u.number, u.temp_id, u.title, u.body, u.assignee, u.status,
    u.workspace_mode, u.ac::jsonb, u.ss::jsonb, u.notes, $14
FROM unnest($1::text[], $2::text[], $3::int[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
    $10::text[], $11::text[], $12::text[], $13::text[])
    AS u(id, board_id, position, number, temp_id, title, body, assignee, status, workspace_mode, ac, ss, notes)`

	insertLinks = `INSERT INTO card_links (board_id, card_id, depends_on)
SELECT u.board_id, u.card_id, u.depends_on FROM unnest($1::text[], $2::text[], $3::text[]) AS u(board_id, card_id, depends_on)`

	upsertBinding = `INSERT INTO channel_bindings (channel, board_id) VALUES ($1, $2)
ON CONFLICT (channel) DO UPDATE SET board_id = excluded.board_id, updated_at = now()`

	// upsertExecutedProposal and updateExecutedProposal record the
	// proposal as approved with its result, as compare-and-sets: only a
	// proposal still pending (or not recorded at all) changes, and
	// bobnet_changed (migration 0013) fails the transaction with BN002
	// when none did. The chain's lock, which every state change takes,
	// already keeps the state from changing after the check; this keeps a
	// session that took no lock from being overwritten.
	upsertExecutedProposal = `WITH w AS (
INSERT INTO proposals (id, channel, requested_by, state, plan, decided_by, board_id, result, decided_at, chain)
VALUES ($1, $2, $3, 'approved', coalesce($4::jsonb, '{}'), $5, $6, $7, now(), $8)
ON CONFLICT (id) DO UPDATE SET state = 'approved', decided_by = excluded.decided_by,
    board_id = excluded.board_id, result = excluded.result, decided_at = now()
WHERE proposals.state = 'pending'
RETURNING 1)
SELECT bobnet_changed($1, (SELECT count(*) FROM w))`

	// updateExecutedProposal is the UPDATE, not upsertExecutedProposal's
	// insert attempt, on the usual path where the record is known to be
	// there.
	updateExecutedProposal = `WITH w AS (
UPDATE proposals SET state = 'approved', decided_by = $2, board_id = $3, result = $4, decided_at = now()
WHERE id = $1 AND state = 'pending'
RETURNING 1)
SELECT bobnet_changed($1, (SELECT count(*) FROM w))`

	// insertAudits writes an execution's audit events in one statement,
	// in order: ids follow the ordinality.
	insertAudits = `INSERT INTO audit_events (actor, action, channel, proposal_id, board_id, detail, dedupe_key)
SELECT u.actor, u.action, u.channel, u.proposal_id, u.board_id, u.detail::jsonb, nullif(u.dedupe_key, '')
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
    WITH ORDINALITY AS u(actor, action, channel, proposal_id, board_id, detail, dedupe_key, ord)
ORDER BY u.ord
ON CONFLICT (dedupe_key) DO NOTHING`

	insertAudit = `INSERT INTO audit_events (actor, action, channel, proposal_id, board_id, detail, dedupe_key)
VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''))
ON CONFLICT (dedupe_key) DO NOTHING`
)

// executeOnce writes an approved, validated plan in one transaction: the
// boards it creates, every card and link (temp ids mapped to new ids), the
// channel's binding to the last board created, the proposal's record as
// approved and an "executed" audit event. Executing a proposal that was
// already executed writes nothing and returns the first result with
// Replayed set. ErrNoTargetBoard: a card action and no board for the
// channel. ErrProposalClosed: the proposal's record says it was cancelled,
// expired or superseded. The transaction holds the chain's lock from its
// start, as every change of a proposal's state does (SetProposalState,
// AddApproval, WithdrawApproval): a cancellation arriving meanwhile waits
// for it and then finds the proposal approved. An error that lost the
// transaction's connection is a *lostConnError (Execute retries it once).
func (s *Store) executeOnce(ctx context.Context, ex board.Execution) (board.ExecResult, error) {
	if ex.ProposalID == "" {
		return board.ExecResult{}, fmt.Errorf("%w: no proposal id", board.ErrInvalidPlan)
	}
	if ex.Plan.Kind != plan.KindProposeActions || len(ex.Plan.Actions) == 0 {
		return board.ExecResult{}, fmt.Errorf("%w: kind %q has no actions", board.ErrInvalidPlan, ex.Plan.Kind)
	}
	if ex.Chain == "" {
		ex.Chain = ex.ProposalID
	}
	// No connection at all: nothing began, nothing to retry; the
	// decision is refused at once, as in any outage.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return board.ExecResult{}, fmt.Errorf("execute proposal %s: %w", ex.ProposalID, err)
	}
	defer conn.Release()
	res, err := s.execute(ctx, conn.Conn(), ex)
	if err == nil && s.afterCommit != nil {
		err = s.afterCommit(conn.Conn())
	}
	if err != nil {
		lost := connectionLost(conn.Conn(), err)
		// Whatever state the batch left the transaction in, end it; on a
		// broken connection this fails too and the pool drops it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, rerr := conn.Exec(rctx, "ROLLBACK"); rerr != nil {
			_ = conn.Conn().Close(rctx) // the pool discards a closed connection
		}
		err = fmt.Errorf("execute proposal %s: %w", ex.ProposalID, err)
		if lost {
			return board.ExecResult{}, &lostConnError{err}
		}
		return board.ExecResult{}, err
	}
	return res, nil
}

// execute is Execute's transaction in two round trips: BEGIN travels with
// the lock and the read, COMMIT with the writes.
func (s *Store) execute(ctx context.Context, conn *pgx.Conn, ex board.Execution) (board.ExecResult, error) {
	if !needsTargetBoard(ex.Plan) && !hasChanges(ex.Plan) {
		res, err := s.executeInOneTrip(ctx, conn, ex)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || (pgErr.Code != sqlstateRecheck && pgErr.Code != sqlstateNotPending) {
			return res, err
		}
		if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
			return board.ExecResult{}, err
		}
	}
	res, err := s.executeChecked(ctx, conn, ex)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == sqlstateNotPending {
		return res, fmt.Errorf("%w: its state changed while it executed", board.ErrProposalClosed)
	}
	return res, err
}

// sqlstateRecheck is what bobnet_executable (migration 0008) raises when a
// proposal is not simply pending: Execute then reads its state and
// decides (executeChecked).
const sqlstateRecheck = "BN001"

// sqlstateNotPending is what bobnet_changed (migration 0013) raises when
// the execution's compare-and-set of the proposal's state found it no
// longer pending: the one-batch path then reads the state and decides,
// and the careful path answers ErrProposalClosed.
const sqlstateNotPending = "BN002"

// executeInOneTrip writes a plan of new boards in one round trip: the
// transaction, the chain's lock, bobnet_executable's check and every
// write go in one batch. It is the usual approval, of a pending proposal
// Postgres has a record of; anything else fails the check and nothing is
// written.
func (s *Store) executeInOneTrip(ctx context.Context, conn *pgx.Conn, ex board.Execution) (board.ExecResult, error) {
	boards, cards, links, res, err := layout(ex.Plan, "", 1)
	if err != nil {
		return board.ExecResult{}, err
	}
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(lockChain, ex.Chain)
	b.Queue(`SELECT bobnet_executable($1, $2)`, ex.ProposalID, ex.Chain)
	queueRows(b, ex, boards, cards, links)
	if err := s.queueRecord(b, ex, boards, res, nil); err != nil {
		return board.ExecResult{}, err
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return board.ExecResult{}, err
	}
	if s.failBeforeCommit != nil {
		return res, s.failBeforeCommit()
	}
	return res, nil
}

// executeChecked reads the proposal's state under the chain's lock and
// decides in Go: a replay returns the first result, a closed proposal or
// another approved version is refused, a plan changing an existing board
// reads that board first.
func (s *Store) executeChecked(ctx context.Context, conn *pgx.Conn, ex board.Execution) (board.ExecResult, error) {
	var res board.ExecResult
	var state *string
	var prior []byte
	var sibling board.ProposalID
	// The lock and the read stay two statements so the read's snapshot is
	// taken after the lock is held.
	pre := &pgx.Batch{}
	pre.Queue("BEGIN")
	pre.Queue(lockChain, ex.Chain)
	pre.Queue(selectProposalForExecute, ex.ProposalID, ex.Chain).QueryRow(func(row pgx.Row) error {
		return row.Scan(&state, &prior, &sibling)
	})
	if err := conn.SendBatch(ctx, pre).Close(); err != nil {
		return res, err
	}
	switch {
	case prior != nil:
		if err := json.Unmarshal(prior, &res); err != nil {
			return res, fmt.Errorf("read earlier result: %w", err)
		}
		res.Replayed = true
		_, err := conn.Exec(ctx, "COMMIT")
		return res, err
	case state != nil && *state != "pending":
		return res, fmt.Errorf("%w: it is %s", board.ErrProposalClosed, *state)
	case sibling != "":
		return res, &board.OtherVersionApprovedError{ProposalID: sibling}
	}

	var target board.ID
	next := 1
	if needsTargetBoard(ex.Plan) {
		err := conn.QueryRow(ctx, selectChannelBoardID, ex.Channel).Scan(&target)
		if errors.Is(err, pgx.ErrNoRows) {
			return res, board.ErrNoTargetBoard
		}
		if err != nil {
			return res, err
		}
		if err := conn.QueryRow(ctx, lockBoardNextNumber, target).Scan(&next); err != nil {
			return res, err
		}
	}
	boards, cards, links, r, err := layout(ex.Plan, target, next)
	if err != nil {
		return res, err
	}
	res = r

	// The plan is sent only when Postgres has no record of the proposal:
	// a recorded one already holds it, and a 64-card plan is most of the
	// bytes of the transaction.
	var planJSON []byte
	if state == nil {
		if planJSON, err = json.Marshal(ex.Plan); err != nil {
			return res, err
		}
	}

	// One round trip for every write and the commit. A plan that changes
	// existing cards needs its new rows first (the changes may name them),
	// so it takes one more.
	b := &pgx.Batch{}
	queueRows(b, ex, boards, cards, links)
	if hasChanges(ex.Plan) {
		if b.Len() > 0 {
			if err := conn.SendBatch(ctx, b).Close(); err != nil {
				return res, err
			}
		}
		if err := applyChanges(ctx, conn, ex, target, &res); err != nil {
			return res, err
		}
		b = &pgx.Batch{}
	}
	if err := s.queueRecord(b, ex, boards, res, planJSON); err != nil {
		return res, err
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return res, err
	}
	if s.failBeforeCommit != nil {
		return res, s.failBeforeCommit()
	}
	return res, nil
}

// queueRows queues the inserts of a plan's new boards, cards and links.
func queueRows(b *pgx.Batch, ex board.Execution, boards []boardRow, cards []cardRow, links []linkRow) {
	if len(boards) > 0 {
		js, _ := json.Marshal(boards)
		b.Queue(insertBoards, js, ex.Channel, ex.ProposalID, ex.Thread)
	}
	if len(cards) > 0 {
		b.Queue(insertCards, append(cardColumns(cards), ex.ProposalID)...)
	}
	if len(links) > 0 {
		from, to, boardIDs := make([]string, len(links)), make([]string, len(links)), make([]string, len(links))
		for i, l := range links {
			boardIDs[i], from[i], to[i] = string(l.BoardID), string(l.CardID), string(l.DependsOn)
		}
		b.Queue(insertLinks, boardIDs, from, to)
	}
}

// queueRecord queues what records the execution, then the commit: the
// channel's binding, the proposal as approved with its result, the
// "executed" audit event and the decision's own, and the decision's
// outbound events (Execution.Events). They say what the changes did too,
// so they come after them. planJSON is nil when
// Postgres already holds the plan.
func (s *Store) queueRecord(b *pgx.Batch, ex board.Execution, boards []boardRow, res board.ExecResult, planJSON []byte) error {
	resultJSON, err := json.Marshal(res)
	if err != nil {
		return err
	}
	detail, _ := json.Marshal(map[string]any{"requested_by": ex.RequestedBy, "cards": res.Cards, "links": res.Links, "boards": len(boards), "updated": res.Updated})
	if len(boards) > 0 && ex.Channel != "" {
		b.Queue(upsertBinding, ex.Channel, boards[len(boards)-1].ID)
	}
	if sc := ex.Plan.Schedule(); sc != nil && res.BoardID != "" {
		// The schedule counts its slots from the approval on.
		b.Queue(upsertPlannedSchedule, res.BoardID, sc.Cron, sc.Timezone, ex.RequestedBy)
	}
	if planJSON == nil {
		b.Queue(updateExecutedProposal, ex.ProposalID, ex.ApprovedBy, res.BoardID, resultJSON)
	} else {
		b.Queue(upsertExecutedProposal, ex.ProposalID, ex.Channel, ex.RequestedBy, planJSON, ex.ApprovedBy, res.BoardID, resultJSON, ex.Chain)
	}
	// The decision's own audit rows commit with the board, so the record
	// never says "approved" without the board, or the reverse.
	events := append([]board.AuditEvent{{Actor: ex.ApprovedBy, Action: "executed", Channel: ex.Channel, ProposalID: ex.ProposalID, Detail: detail}}, ex.Audit...)
	n := len(events)
	actor, action, channel, proposal, boardID, details, dedupe := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]*string, n), make([]string, n)
	for i, e := range events {
		actor[i], action[i], channel[i], proposal[i], boardID[i], dedupe[i] = e.Actor, e.Action, e.Channel, string(e.ProposalID), string(res.BoardID), e.DedupeKey
		if len(e.Detail) > 0 {
			d := string(e.Detail)
			details[i] = &d
		}
	}
	b.Queue(insertAudits, actor, action, channel, proposal, boardID, details, dedupe)
	if ex.Events != nil {
		evs, err := ex.Events(res)
		if err != nil {
			return fmt.Errorf("outbound events: %w", err)
		}
		queueEvents(b, evs)
	}
	if s.failBeforeCommit == nil {
		b.Queue("COMMIT")
	}
	return nil
}
