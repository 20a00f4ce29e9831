package board

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bobnet/bobnet/planner"
)

// More errors the store returns; check with errors.Is.
var (
	// ErrProposalClosed means the proposal was cancelled, expired or
	// superseded, so it must not be executed.
	ErrProposalClosed = errors.New("proposal is no longer pending")
	// ErrInvalidPlan means the plan cannot be executed as given (not a
	// propose_actions plan, or an action the store does not know).
	ErrInvalidPlan = errors.New("plan cannot be executed")
)

// OtherVersionApprovedError says another version of the same request was
// approved already, so this one must not be executed. It matches
// ErrProposalClosed.
type OtherVersionApprovedError struct {
	ProposalID string // the approved version
}

func (e *OtherVersionApprovedError) Error() string {
	return "another version of this plan was approved: " + e.ProposalID
}

// Is makes errors.Is(err, ErrProposalClosed) true.
func (e *OtherVersionApprovedError) Is(target error) bool { return target == ErrProposalClosed }

// Card statuses a card may have on a board; planned cards start in the
// first two.
var Statuses = planner.CardStatuses

// Store is the Postgres side of BobNet. Its methods are safe for concurrent
// use.
type Store struct {
	pool   *pgxpool.Pool
	logger *slog.Logger
	// failBeforeCommit, when set by a test in this package, fails an
	// execution after all its rows are written but before commit.
	failBeforeCommit func() error
}

// Open connects to databaseURL and checks the connection.
func Open(ctx context.Context, databaseURL string, logger *slog.Logger) (*Store, error) {
	cfg, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse database URL: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to Postgres: %w", err)
	}
	return New(pool, logger), nil
}

// New returns a store on an existing pool.
func New(pool *pgxpool.Pool, logger *slog.Logger) *Store {
	return &Store{pool: pool, logger: logger}
}

// Pool returns the store's connection pool, for migrations.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close closes the pool.
func (s *Store) Close() { s.pool.Close() }

// Ping reports whether Postgres answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	return nil
}

// newID returns prefix followed by 26 lower-case base32 characters: 128
// random bits, so a board link cannot be guessed from another.
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return prefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// NewBoardID returns a fresh random board id.
func NewBoardID() ID { return ID(newID("b_")) }

// NewCardID returns a fresh random card id.
func NewCardID() CardID { return CardID(newID("c_")) }

// cardRow and linkRow are the JSON shapes jsonb_to_recordset reads; sending
// all cards as one parameter keeps a 64-card plan to one statement.
type cardRow struct {
	ID                 CardID   `json:"id"`
	BoardID            ID       `json:"board_id"`
	Position           int      `json:"position"`
	Number             int      `json:"number"`
	TempID             string   `json:"temp_id"`
	Title              string   `json:"title"`
	Body               string   `json:"body"`
	Assignee           string   `json:"assignee"`
	Status             string   `json:"status"`
	WorkspaceMode      string   `json:"workspace_mode"`
	AcceptanceCriteria []string `json:"acceptance_criteria"`
	SuggestedSkills    []string `json:"suggested_skills"`
	Notes              string   `json:"notes"`
}

type linkRow struct {
	BoardID   ID     `json:"board_id"`
	CardID    CardID `json:"card_id"`
	DependsOn CardID `json:"depends_on"`
}

type boardRow struct {
	ID   ID     `json:"id"`
	Name string `json:"name"`
	Goal string `json:"goal"`
	Key  string `json:"key"`
}

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

	insertBoards = `INSERT INTO boards (id, name, goal, key, channel, proposal_id, thread)
SELECT r.id, r.name, r.goal, r.key, $2, $3, $4 FROM jsonb_to_recordset($1::jsonb) AS r(id text, name text, goal text, key text)`

	insertCards = `INSERT INTO cards (id, board_id, position, number, temp_id, title, body, assignee, status,
    workspace_mode, acceptance_criteria, suggested_skills, notes, proposal_id)
SELECT r.id, r.board_id, r.position, r.number, r.temp_id, r.title, r.body, r.assignee, r.status,
    r.workspace_mode, coalesce(r.acceptance_criteria, '[]'), coalesce(r.suggested_skills, '[]'), r.notes, $2
FROM jsonb_to_recordset($1::jsonb) AS r(id text, board_id text, position int, number int, temp_id text, title text,
    body text, assignee text, status text, workspace_mode text, acceptance_criteria jsonb,
    suggested_skills jsonb, notes text)`

	insertLinks = `INSERT INTO card_links (board_id, card_id, depends_on)
SELECT r.board_id, r.card_id, r.depends_on FROM jsonb_to_recordset($1::jsonb) AS r(board_id text, card_id text, depends_on text)`

	upsertBinding = `INSERT INTO channel_bindings (channel, board_id) VALUES ($1, $2)
ON CONFLICT (channel) DO UPDATE SET board_id = excluded.board_id, updated_at = now()`

	upsertExecutedProposal = `INSERT INTO proposals (id, channel, requested_by, state, plan, decided_by, board_id, result, decided_at, chain)
VALUES ($1, $2, $3, 'approved', coalesce($4::jsonb, '{}'), $5, $6, $7, now(), $8)
ON CONFLICT (id) DO UPDATE SET state = 'approved', decided_by = excluded.decided_by,
    board_id = excluded.board_id, result = excluded.result, decided_at = now()`

	insertAudit = `INSERT INTO audit_events (actor, action, channel, proposal_id, board_id, detail, dedupe_key)
VALUES ($1, $2, $3, $4, $5, $6, nullif($7, ''))
ON CONFLICT (dedupe_key) DO NOTHING`
)

// Execute writes an approved, validated plan in one transaction: the boards
// it creates, every card and link (temp ids mapped to new ids), the
// channel's binding to the last board created, the proposal's record as
// approved and an "executed" audit event. Executing a proposal that was
// already executed writes nothing and returns the first result with
// Replayed set. ErrNoTargetBoard: a card action and no board for the
// channel. ErrProposalClosed: the proposal's record says it was cancelled,
// expired or superseded.
func (s *Store) Execute(ctx context.Context, ex Execution) (ExecResult, error) {
	if ex.ProposalID == "" {
		return ExecResult{}, fmt.Errorf("%w: no proposal id", ErrInvalidPlan)
	}
	if ex.Plan.Kind != planner.KindProposeActions || len(ex.Plan.Actions) == 0 {
		return ExecResult{}, fmt.Errorf("%w: kind %q has no actions", ErrInvalidPlan, ex.Plan.Kind)
	}
	if ex.Chain == "" {
		ex.Chain = ex.ProposalID
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return ExecResult{}, fmt.Errorf("execute proposal %s: %w", ex.ProposalID, err)
	}
	defer conn.Release()
	res, err := s.execute(ctx, conn.Conn(), ex)
	if err != nil {
		// Whatever state the batch left the transaction in, end it; on a
		// broken connection this fails too and the pool drops it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, rerr := conn.Exec(rctx, "ROLLBACK"); rerr != nil {
			_ = conn.Conn().Close(rctx) // the pool discards a closed connection
		}
		return ExecResult{}, fmt.Errorf("execute proposal %s: %w", ex.ProposalID, err)
	}
	return res, nil
}

// execute is Execute's transaction in two round trips: BEGIN travels with
// the lock and the read, COMMIT with the writes.
func (s *Store) execute(ctx context.Context, conn *pgx.Conn, ex Execution) (ExecResult, error) {
	var res ExecResult
	var state *string
	var prior []byte
	var sibling string
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
		return res, fmt.Errorf("%w: it is %s", ErrProposalClosed, *state)
	case sibling != "":
		return res, &OtherVersionApprovedError{ProposalID: sibling}
	}

	var target ID
	needsTarget := false
	for _, a := range ex.Plan.Actions {
		needsTarget = needsTarget || a.Type.NeedsTargetBoard()
	}
	next := 1
	if needsTarget {
		err := conn.QueryRow(ctx, selectChannelBoardID, ex.Channel).Scan(&target)
		if errors.Is(err, pgx.ErrNoRows) {
			return res, ErrNoTargetBoard
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
	changes := hasChanges(ex.Plan)

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
	if len(boards) > 0 {
		js, _ := json.Marshal(boards)
		b.Queue(insertBoards, js, ex.Channel, ex.ProposalID, ex.Thread)
	}
	if len(cards) > 0 {
		js, _ := json.Marshal(cards)
		b.Queue(insertCards, js, ex.ProposalID)
	}
	if len(links) > 0 {
		js, _ := json.Marshal(links)
		b.Queue(insertLinks, js)
	}
	if changes {
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
	// The result and the audit say what the changes did too, so they are
	// made after them.
	resultJSON, err := json.Marshal(res)
	if err != nil {
		return res, err
	}
	detail, _ := json.Marshal(map[string]any{"requested_by": ex.RequestedBy, "cards": res.Cards, "links": res.Links, "boards": len(boards), "updated": res.Updated})
	if len(boards) > 0 && ex.Channel != "" {
		b.Queue(upsertBinding, ex.Channel, boards[len(boards)-1].ID)
	}
	b.Queue(upsertExecutedProposal, ex.ProposalID, ex.Channel, ex.RequestedBy, planJSON, ex.ApprovedBy, res.BoardID, resultJSON, ex.Chain)
	b.Queue(insertAudit, ex.ApprovedBy, "executed", ex.Channel, ex.ProposalID, res.BoardID, detail, "")
	for _, e := range ex.Audit {
		// The decision's own audit rows commit with the board, so the
		// record never says "approved" without the board, or the reverse.
		b.Queue(insertAudit, e.Actor, e.Action, e.Channel, e.ProposalID, res.BoardID, auditDetail(e), e.DedupeKey)
	}
	if s.failBeforeCommit == nil {
		b.Queue("COMMIT")
	}
	if err := conn.SendBatch(ctx, b).Close(); err != nil {
		return res, err
	}
	if s.failBeforeCommit != nil {
		return res, s.failBeforeCommit()
	}
	return res, nil
}

// layout turns a plan into the rows to insert, with new ids. Card actions
// go to target, numbered from next on; board actions to the board they
// create, numbered from 1.
func layout(plan planner.Envelope, target ID, next int) ([]boardRow, []cardRow, []linkRow, ExecResult, error) {
	var boards []boardRow
	var cards []cardRow
	var links []linkRow
	res := ExecResult{CardIDs: map[string]CardID{}}
	position := 0
	numbers := map[ID]int{} // board -> the number its next card takes
	if target != "" {
		numbers[target] = next
	}
	for i, a := range plan.Actions {
		var boardID ID
		switch a.Type {
		case planner.ActionCreateBoard, planner.ActionCreateBoardWithCards:
			if a.Board == nil {
				return nil, nil, nil, res, fmt.Errorf("%w: actions[%d] has no board", ErrInvalidPlan, i)
			}
			boardID = NewBoardID()
			boards = append(boards, boardRow{ID: boardID, Name: a.Board.Name, Goal: a.Board.Goal, Key: BoardKey(a.Board.Name)})
		case planner.ActionCreateCard, planner.ActionCreateCardBatch:
			boardID = target
		case planner.ActionUpdateCard, planner.ActionAddLinks:
			// Applied by applyChanges once the new cards exist.
			res.BoardID = target
			continue
		default:
			return nil, nil, nil, res, fmt.Errorf("%w: actions[%d] has type %q", ErrInvalidPlan, i, a.Type)
		}
		res.BoardID = boardID
		if _, ok := numbers[boardID]; !ok {
			numbers[boardID] = 1
		}
		local := map[string]CardID{}
		for _, c := range a.Cards {
			id := NewCardID()
			local[c.TempID] = id
			res.CardIDs[c.TempID] = id
			status, mode := c.Status, c.WorkspaceMode
			if mode == "" {
				mode = planner.WorkspaceDirect
			}
			cards = append(cards, cardRow{
				ID: id, BoardID: boardID, Position: position, Number: numbers[boardID], TempID: c.TempID, Title: c.Title, Body: c.Body,
				Assignee: c.Assignee, Status: status, WorkspaceMode: mode,
				AcceptanceCriteria: nonNil(c.AcceptanceCriteria), SuggestedSkills: nonNil(c.SuggestedSkills), Notes: c.Notes,
			})
			position++
			numbers[boardID]++
		}
		seen := map[linkRow]bool{}
		addLink := func(card, dep string) error {
			from, ok1 := local[card]
			to, ok2 := local[dep]
			if !ok1 || !ok2 {
				return fmt.Errorf("%w: actions[%d] links %q to %q, which are not both its cards", ErrInvalidPlan, i, card, dep)
			}
			l := linkRow{BoardID: boardID, CardID: from, DependsOn: to}
			if !seen[l] {
				seen[l] = true
				links = append(links, l)
			}
			return nil
		}
		for _, l := range a.Links {
			if err := addLink(l.Card, l.DependsOn); err != nil {
				return nil, nil, nil, res, err
			}
		}
		// A plan that skipped normalization still has card-level depends_on.
		for _, c := range a.Cards {
			for _, d := range c.DependsOn {
				if err := addLink(c.TempID, d); err != nil {
					return nil, nil, nil, res, err
				}
			}
		}
	}
	if len(boards) > 0 {
		res.BoardID = boards[len(boards)-1].ID
	}
	res.Cards, res.Links = len(cards), len(links)
	return boards, cards, links, res, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

const (
	selectBoard = `SELECT id, name, goal, key, channel, thread, created_at FROM boards WHERE id = $1`

	selectCards = `SELECT c.id, c.board_id, c.title, c.body, c.assignee, c.status, c.workspace_mode, c.acceptance_criteria,
    c.suggested_skills, c.notes, c.number, c.version, c.criteria_done, b.key || '-' || c.number
FROM cards c JOIN boards b ON b.id = c.board_id WHERE c.board_id = $1 ORDER BY c.number`

	selectLinks = `SELECT card_id, depends_on FROM card_links WHERE board_id = $1 ORDER BY card_id, depends_on`
)

// Board returns a board with its cards in plan order, each with the ids of
// the cards it depends on. ErrNotFound when there is no such board.
func (s *Store) Board(ctx context.Context, id ID) (Board, []Card, error) {
	var b Board
	batch := &pgx.Batch{}
	batch.Queue(selectBoard, id)
	batch.Queue(selectCards, id)
	batch.Queue(selectLinks, id)
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	if err := br.QueryRow().Scan(&b.ID, &b.Name, &b.Goal, &b.Key, &b.Channel, &b.Thread, &b.CreatedAt); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return Board{}, nil, fmt.Errorf("board %s: %w", id, ErrNotFound)
		}
		return Board{}, nil, fmt.Errorf("board %s: %w", id, err)
	}
	rows, _ := br.Query()
	cards, err := pgx.CollectRows(rows, scanCard)
	if err != nil {
		return Board{}, nil, fmt.Errorf("cards of board %s: %w", id, err)
	}
	byID := make(map[CardID]*Card, len(cards))
	for i := range cards {
		byID[cards[i].ID] = &cards[i]
	}
	rows, _ = br.Query()
	var card, dep CardID
	_, err = pgx.ForEachRow(rows, []any{&card, &dep}, func() error {
		if c := byID[card]; c != nil {
			c.DependsOn = append(c.DependsOn, dep)
		}
		return nil
	})
	if err != nil {
		return Board{}, nil, fmt.Errorf("links of board %s: %w", id, err)
	}
	return b, cards, nil
}

// Status summarizes a board: counts by status (every status, zeros
// included), cards waiting on an unfinished dependency, and cards ready to
// start (not started, every dependency done). ErrNotFound when there is no
// such board.
func (s *Store) Status(ctx context.Context, id ID) (Status, error) {
	b, cards, err := s.Board(ctx, id)
	if err != nil {
		return Status{}, err
	}
	return Summarize(b, cards), nil
}

// Summarize computes a Status from a board's cards.
func Summarize(b Board, cards []Card) Status {
	st := Status{Board: b, Counts: map[string]int{}, Waiting: []Card{}, Ready: []Card{}}
	for _, s := range Statuses {
		st.Counts[s] = 0
	}
	done := map[CardID]bool{}
	for _, c := range cards {
		st.Counts[c.Status]++
		done[c.ID] = c.Status == "Done"
	}
	for _, c := range cards {
		if c.Status == "Done" {
			continue
		}
		blocked := false
		for _, d := range c.DependsOn {
			blocked = blocked || !done[d]
		}
		switch {
		case blocked:
			st.Waiting = append(st.Waiting, c)
		case c.Status == "Backlog" || c.Status == "Ready":
			st.Ready = append(st.Ready, c)
		}
	}
	return st
}

const updateCardStatus = `UPDATE cards SET status = $2, updated_at = now() WHERE id = $1`

// SetCardStatus moves a card to another status. ErrNotFound when there is
// no such card; the schema rejects an unknown status.
func (s *Store) SetCardStatus(ctx context.Context, id CardID, status string) error {
	tag, err := s.pool.Exec(ctx, updateCardStatus, id, status)
	if err != nil {
		return fmt.Errorf("set status of card %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("card %s: %w", id, ErrNotFound)
	}
	return nil
}

const selectChannelBoard = `SELECT b.id, b.name, b.goal, b.key, b.channel, b.thread, b.created_at
FROM channel_bindings cb JOIN boards b ON b.id = cb.board_id WHERE cb.channel = $1`

// ChannelBoard returns the channel's current board: the one its binding
// names, which is the board most recently created in (or bound to) the
// channel. It is the one answer to "which board is this channel's" that
// status, card commands, planning and execution all use. ErrNotFound when
// the channel has none.
func (s *Store) ChannelBoard(ctx context.Context, channel string) (Board, error) {
	var b Board
	err := s.pool.QueryRow(ctx, selectChannelBoard, channel).Scan(&b.ID, &b.Name, &b.Goal, &b.Key, &b.Channel, &b.Thread, &b.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Board{}, fmt.Errorf("board of channel %s: %w", channel, ErrNotFound)
	}
	if err != nil {
		return Board{}, fmt.Errorf("board of channel %s: %w", channel, err)
	}
	return b, nil
}

// BindChannel makes id the channel's current board. ErrNotFound when there
// is no such board.
func (s *Store) BindChannel(ctx context.Context, channel string, id ID) error {
	_, err := s.pool.Exec(ctx, upsertBinding, channel, id)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		return fmt.Errorf("bind %s to board %s: %w", channel, id, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("bind %s to board %s: %w", channel, id, err)
	}
	return nil
}

// BoardSummary describes a board for the planner's prompt: name, goal,
// counts by status and up to 40 cards that are not done; and, for
// validating changes to it, every card with its handle and dependencies.
func (s *Store) BoardSummary(ctx context.Context, id ID) (planner.BoardSummary, error) {
	b, cards, err := s.Board(ctx, id)
	if err != nil {
		return planner.BoardSummary{}, err
	}
	st := Summarize(b, cards)
	sum := planner.BoardSummary{ID: string(b.ID), Name: b.Name, Goal: b.Goal, Counts: map[string]int{}}
	for k, v := range st.Counts {
		if v > 0 {
			sum.Counts[k] = v
		}
	}
	sum.State = &planner.BoardState{}
	for _, c := range cards {
		cs := planner.CardSummary{ID: string(c.ID), Handle: c.Handle, Title: c.Title, Status: c.Status, Assignee: c.Assignee}
		for _, d := range c.DependsOn {
			cs.DependsOn = append(cs.DependsOn, string(d))
		}
		sum.State.Cards = append(sum.State.Cards, cs)
		if c.Status != "Done" && len(sum.Cards) < 40 {
			sum.Cards = append(sum.Cards, cs)
		}
	}
	return sum, nil
}

// AuditFilter selects audit events; empty fields match everything.
type AuditFilter struct {
	Channel    string
	ProposalID string
	BoardID    ID
	Limit      int // default 1000
}

const selectAudit = `SELECT id, at, actor, action, channel, proposal_id, board_id, detail FROM audit_events
WHERE ($1 = '' OR channel = $1) AND ($2 = '' OR proposal_id = $2) AND ($3 = '' OR board_id = $3)
ORDER BY id LIMIT $4`

// auditDetail is an event's detail as a query argument: NULL when empty.
func auditDetail(e AuditEvent) any {
	if len(e.Detail) > 0 {
		return []byte(e.Detail)
	}
	return nil
}

// RecordAudit writes one audit event. An event with a DedupeKey that was
// recorded before is not written again.
func (s *Store) RecordAudit(ctx context.Context, e AuditEvent) error {
	if _, err := s.pool.Exec(ctx, insertAudit, e.Actor, e.Action, e.Channel, e.ProposalID, e.BoardID, auditDetail(e), e.DedupeKey); err != nil {
		return fmt.Errorf("record audit %s: %w", e.Action, err)
	}
	return nil
}

// Audit returns the audit events matching f, oldest first.
func (s *Store) Audit(ctx context.Context, f AuditFilter) ([]AuditEvent, error) {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	rows, _ := s.pool.Query(ctx, selectAudit, f.Channel, f.ProposalID, f.BoardID, f.Limit)
	events, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AuditEvent, error) {
		var e AuditEvent
		var detail []byte
		err := row.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Channel, &e.ProposalID, &e.BoardID, &detail)
		e.Detail = detail
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("read audit: %w", err)
	}
	return events, nil
}

// ProposalRecord is a proposal's history in Postgres.
type ProposalRecord struct {
	ID string
	// Chain is the id of the first version of the request's proposals;
	// empty means ID.
	Chain       string
	Channel     string
	Version     int
	Supersedes  string
	RequestedBy string
	State       string
	Plan        json.RawMessage
	DecidedBy   string
	BoardID     ID
	CreatedAt   time.Time
	ExpiresAt   time.Time
	DecidedAt   time.Time
	// Policy is the approval policy in force when the proposal was made
	// (JSON, as the engine wrote it); nil when none was recorded.
	Policy json.RawMessage
}

const (
	upsertProposal = `INSERT INTO proposals (id, channel, version, supersedes, requested_by, state, plan, created_at, expires_at, chain, policy)
VALUES ($1, $2, $3, nullif($4, ''), $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (id) DO UPDATE SET plan = excluded.plan, expires_at = excluded.expires_at
WHERE proposals.state = 'pending'`

	updateProposalState = `UPDATE proposals SET state = $2, decided_by = $3, decided_at = now()
WHERE id = $1 AND state = 'pending'`

	selectProposal = `SELECT id, channel, version, coalesce(supersedes, ''), requested_by, state, plan, decided_by,
    coalesce(board_id, ''), created_at, coalesce(expires_at, 'epoch'), coalesce(decided_at, 'epoch'), policy
FROM proposals WHERE id = $1`
)

// SaveProposal records a new pending proposal (or refreshes a pending
// one's plan and expiry). A decided proposal is left as it is.
func (s *Store) SaveProposal(ctx context.Context, p ProposalRecord) error {
	if p.State == "" {
		p.State = "pending"
	}
	if p.Version == 0 {
		p.Version = 1
	}
	if p.CreatedAt.IsZero() {
		p.CreatedAt = time.Now()
	}
	var expires any
	if !p.ExpiresAt.IsZero() {
		expires = p.ExpiresAt
	}
	plan := []byte(p.Plan)
	if len(plan) == 0 {
		plan = []byte("{}")
	}
	if p.Chain == "" {
		p.Chain = p.ID
	}
	if _, err := s.pool.Exec(ctx, upsertProposal, p.ID, p.Channel, p.Version, p.Supersedes, p.RequestedBy, p.State, plan, p.CreatedAt, expires, p.Chain, nullJSON(p.Policy)); err != nil {
		return fmt.Errorf("save proposal %s: %w", p.ID, err)
	}
	return nil
}

// SetProposalState moves a pending proposal to cancelled, expired or
// superseded. An approved or already closed proposal is not changed:
// ErrProposalClosed. ErrNotFound when there is no such proposal.
func (s *Store) SetProposalState(ctx context.Context, id, state, decidedBy string) error {
	switch state {
	case "cancelled", "expired", "superseded":
	default:
		return fmt.Errorf("set proposal %s to %q: not a closing state", id, state)
	}
	tag, err := s.pool.Exec(ctx, updateProposalState, id, state, decidedBy)
	if err != nil {
		return fmt.Errorf("set proposal %s %s: %w", id, state, err)
	}
	if tag.RowsAffected() == 0 {
		if _, err := s.Proposal(ctx, id); err != nil {
			return err
		}
		return fmt.Errorf("set proposal %s %s: %w", id, state, ErrProposalClosed)
	}
	return nil
}

// Proposal returns a proposal's record. ErrNotFound when there is none.
func (s *Store) Proposal(ctx context.Context, id string) (ProposalRecord, error) {
	var p ProposalRecord
	var plan []byte
	err := s.pool.QueryRow(ctx, selectProposal, id).Scan(&p.ID, &p.Channel, &p.Version, &p.Supersedes, &p.RequestedBy,
		&p.State, &plan, &p.DecidedBy, &p.BoardID, &p.CreatedAt, &p.ExpiresAt, &p.DecidedAt, &p.Policy)
	if errors.Is(err, pgx.ErrNoRows) {
		return ProposalRecord{}, fmt.Errorf("proposal %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return ProposalRecord{}, fmt.Errorf("proposal %s: %w", id, err)
	}
	p.Plan = plan
	if p.ExpiresAt.Unix() == 0 {
		p.ExpiresAt = time.Time{}
	}
	if p.DecidedAt.Unix() == 0 {
		p.DecidedAt = time.Time{}
	}
	return p, nil
}

const (
	insertDelivery = `INSERT INTO webhook_deliveries (hook, delivery_id, request_id) VALUES ($1, $2, $3)
ON CONFLICT (hook, delivery_id) DO NOTHING`
	selectDelivery = `SELECT request_id FROM webhook_deliveries WHERE hook = $1 AND delivery_id = $2`
)

// RecordDelivery remembers a webhook delivery. For a delivery seen before
// it returns the first request id and isNew false, so a retried delivery
// maps to the same request.
func (s *Store) RecordDelivery(ctx context.Context, hook, deliveryID, requestID string) (firstRequestID string, isNew bool, err error) {
	tag, err := s.pool.Exec(ctx, insertDelivery, hook, deliveryID, requestID)
	if err != nil {
		return "", false, fmt.Errorf("record delivery %s/%s: %w", hook, deliveryID, err)
	}
	if tag.RowsAffected() == 1 {
		return requestID, true, nil
	}
	if err := s.pool.QueryRow(ctx, selectDelivery, hook, deliveryID).Scan(&firstRequestID); err != nil {
		return "", false, fmt.Errorf("read delivery %s/%s: %w", hook, deliveryID, err)
	}
	return firstRequestID, false, nil
}
