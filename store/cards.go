package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"

	"github.com/jackc/pgx/v5"
)

// Limits on what a person may write into a card; the same as a plan's.
const (
	maxCardTitle    = 200
	maxCardBody     = 8000
	maxCardAssignee = 100
)

// changesChannel is the Postgres notification channel that carries card
// changes to every BobNet process's Feed.
const changesChannel = "bobnet_card_changes"

const (
	selectCardForUpdate = `SELECT c.id, c.board_id, c.title, c.body, c.assignee, c.status, c.workspace_mode, c.acceptance_criteria,
    c.suggested_skills, c.notes, c.number, c.version, c.criteria_done, b.key || '-' || c.number
FROM cards c JOIN boards b ON b.id = c.board_id WHERE c.id = $1 FOR UPDATE OF c`

	// cardFields are what scanCard reads, of c (cards) and b (boards).
	cardFields = `c.id, c.board_id, c.title, c.body, c.assignee, c.status, c.workspace_mode, c.acceptance_criteria,
    c.suggested_skills, c.notes, c.number, c.version, c.criteria_done, b.key || '-' || c.number`
	selectCardColumns = `SELECT ` + cardFields + ` FROM cards c JOIN boards b ON b.id = c.board_id`
	selectCard        = selectCardColumns + ` WHERE c.id = $1`

	selectCardByHandle = `SELECT c.id FROM cards c JOIN boards b ON b.id = c.board_id
WHERE b.key = $1 AND c.number = $2 AND ($3 = '' OR b.tenant = $3) LIMIT 2`

	selectCardsByHandle = `SELECT c.id FROM cards c JOIN boards b ON b.id = c.board_id WHERE b.key = $1 AND c.number = $2 ORDER BY b.created_at, b.id`

	selectCardDeps = `SELECT depends_on FROM card_links WHERE card_id = $1 ORDER BY depends_on`

	// Locking the dependencies for share keeps them from leaving Done
	// while this card starts.
	selectUnfinishedDeps = `SELECT c.id, c.board_id, c.title, c.body, c.assignee, c.status, c.workspace_mode, c.acceptance_criteria,
    c.suggested_skills, c.notes, c.number, c.version, c.criteria_done, b.key || '-' || c.number
FROM card_links l JOIN cards c ON c.id = l.depends_on JOIN boards b ON b.id = c.board_id
WHERE l.card_id = $1 AND c.status <> 'Done' ORDER BY c.number FOR SHARE OF c`

	updateCard = `UPDATE cards SET status = $2, assignee = $3, title = $4, body = $5, criteria_done = $6,
    version = version + 1, updated_at = now()
WHERE id = $1 RETURNING version`

	insertCardAudit = `INSERT INTO audit_events (actor, action, channel, board_id, detail)
VALUES ($1, 'card_changed', $2, $3, $4) RETURNING id`

	notifyChange = `SELECT pg_notify('` + changesChannel + `', $1)`
)

// scanCard reads one row of the card queries above; DependsOn is left
// empty for the caller to fill.
func scanCard(row pgx.CollectableRow) (board.Card, error) {
	var c board.Card
	var ac, ss, done []byte
	err := row.Scan(&c.ID, &c.BoardID, &c.Title, &c.Body, &c.Assignee, &c.Status, &c.WorkspaceMode, &ac, &ss, &c.Notes,
		&c.Number, &c.Version, &done, &c.Handle)
	if err == nil {
		err = errors.Join(json.Unmarshal(ac, &c.AcceptanceCriteria), json.Unmarshal(ss, &c.SuggestedSkills), json.Unmarshal(done, &c.CriteriaDone))
	}
	c.DependsOn = []board.CardID{}
	return c, err
}

// readCard reads one card with its dependencies. ErrNotFound when there is
// no such card.
func readCard(ctx context.Context, q querier, sql string, id board.CardID) (board.Card, error) {
	rows, _ := q.Query(ctx, sql, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanCard)
	if errors.Is(err, pgx.ErrNoRows) {
		return board.Card{}, fmt.Errorf("card %s: %w", id, board.ErrNotFound)
	}
	if err != nil {
		return board.Card{}, fmt.Errorf("card %s: %w", id, err)
	}
	rows, _ = q.Query(ctx, selectCardDeps, id)
	deps, err := pgx.CollectRows(rows, pgx.RowTo[board.CardID])
	if err != nil {
		return board.Card{}, fmt.Errorf("dependencies of card %s: %w", id, err)
	}
	c.DependsOn = append(c.DependsOn, deps...)
	return c, nil
}

// Card returns one card with the ids of the cards it depends on.
// ErrNotFound when there is no such card.
func (s *Store) Card(ctx context.Context, id board.CardID) (board.Card, error) {
	return readCard(ctx, s.pool, selectCard, id)
}

// CardByHandle finds a tenant's card by its handle (NEWS-3, any case);
// board keys being unique per tenant, it names one card there. The empty
// tenant looks among every tenant's boards (the API, whose tokens are
// checked against the card's board apart), where a handle that names
// cards of several tenants is ErrAmbiguous (saying nothing of them). ErrNotFound when the
// handle is malformed or names no card of the tenant.
func (s *Store) CardByHandle(ctx context.Context, tenant board.Tenant, handle string) (board.Card, error) {
	key, n, ok := board.ParseHandle(handle)
	if !ok {
		return board.Card{}, fmt.Errorf("card %q: not a handle such as NEWS-3: %w", handle, board.ErrNotFound)
	}
	rows, _ := s.pool.Query(ctx, selectCardByHandle, key, n, string(tenant))
	ids, err := pgx.CollectRows(rows, pgx.RowTo[board.CardID])
	if err != nil {
		return board.Card{}, fmt.Errorf("card %s-%d: %w", key, n, err)
	}
	switch len(ids) {
	case 0:
		return board.Card{}, fmt.Errorf("card %s-%d: %w", key, n, board.ErrNotFound)
	case 1:
		return s.Card(ctx, ids[0])
	}
	return board.Card{}, fmt.Errorf("card %s-%d: the handle names cards of several tenants' boards; name the card by its id: %w", key, n, board.ErrAmbiguous)
}

// CardsByHandle returns every card that a handle (NEWS-3, any case) names
// across tenants, for a caller that picks among them what it may see (an
// API token limited to channels). None when the handle is malformed or
// names no card.
func (s *Store) CardsByHandle(ctx context.Context, handle string) ([]board.Card, error) {
	key, n, ok := board.ParseHandle(handle)
	if !ok {
		return nil, nil
	}
	rows, _ := s.pool.Query(ctx, selectCardsByHandle, key, n)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[board.CardID])
	if err != nil {
		return nil, fmt.Errorf("cards %s-%d: %w", key, n, err)
	}
	out := make([]board.Card, 0, len(ids))
	for _, id := range ids {
		c, err := s.Card(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// FindCard resolves what a person calls a card on a board: its handle
// (NEWS-3, news-3, #3 or 3), its id, or a case-insensitive prefix of its
// title that fits one card (an exact title wins over prefixes).
// ErrNotFound when nothing fits; *AmbiguousError when several do.
func (s *Store) FindCard(ctx context.Context, id board.ID, ref string) (board.Card, error) {
	b, cards, err := s.Board(ctx, id)
	if err != nil {
		return board.Card{}, err
	}
	return board.MatchCard(b, cards, ref)
}

// ChangeCard applies one change to a card in one transaction: the card is
// locked, checked and written, and an audit event records who changed what,
// from where, with every field's value before and after. Other
// processes learn of it through their Feed. ErrNotFound: no such card.
// ErrInvalidChange, *BlockedError, *ConflictError: refused, nothing
// written.
func (s *Store) ChangeCard(ctx context.Context, ch board.CardChange) (board.CardUpdate, error) {
	var up board.CardUpdate
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		up, err = changeCard(ctx, tx, ch)
		return err
	})
	if err != nil {
		return board.CardUpdate{}, fmt.Errorf("change card %s: %w", ch.Card, err)
	}
	return up, nil
}

// cardText checks a card's text with the check plans get
// (plan.CheckText), so every way text reaches a card (a plan, the API,
// the board page, a chat command) is held to the same rules.
func cardText(field, s string, line bool) (string, error) {
	out, err := plan.CheckText(s, line)
	if err != nil {
		return "", fmt.Errorf("%w: the %s %v; card text is plain text", board.ErrInvalidChange, field, err)
	}
	return strings.TrimSpace(out), nil
}

// changeCard is ChangeCard inside the caller's transaction, so an approved
// plan's card updates commit with the rest of the plan. No change skips
// the review of a running run's card (reviewGate).
func changeCard(ctx context.Context, tx querier, ch board.CardChange) (board.CardUpdate, error) {
	return changeCardAs(ctx, tx, ch, false)
}

// changeCardAs is changeCard; review says the change is a run card's
// review decision (ReviewRunCard), the one move out of Review (and, for
// a reviewed runner's card, into Done) that reviewGate lets through.
func changeCardAs(ctx context.Context, tx querier, ch board.CardChange, review bool) (board.CardUpdate, error) {
	cur, err := readCard(ctx, tx, selectCardForUpdate, ch.Card)
	if err != nil {
		return board.CardUpdate{}, err
	}
	if ch.IfVersion != 0 && ch.IfVersion != cur.Version {
		return board.CardUpdate{}, &board.ConflictError{Current: cur, Based: ch.IfVersion}
	}
	next := cur
	var changes []board.FieldChange
	set := func(field, from, to string) {
		if from != to {
			changes = append(changes, board.FieldChange{Field: field, From: from, To: to})
		}
	}
	if ch.Status != nil {
		st, ok := board.ParseStatus(*ch.Status)
		if !ok {
			return board.CardUpdate{}, fmt.Errorf("%w: status %q is not one of %s", board.ErrInvalidChange, *ch.Status, strings.Join(board.Statuses, ", "))
		}
		next.Status = st
		set("status", cur.Status, st)
	}
	if ch.Assignee != nil {
		assignee, err := cardText("assignee", *ch.Assignee, true)
		if err != nil {
			return board.CardUpdate{}, err
		}
		next.Assignee = assignee
		if utf8.RuneCountInString(next.Assignee) > maxCardAssignee {
			return board.CardUpdate{}, fmt.Errorf("%w: assignee is longer than %d characters", board.ErrInvalidChange, maxCardAssignee)
		}
		set("assignee", cur.Assignee, next.Assignee)
	}
	if ch.Title != nil {
		title, err := cardText("title", *ch.Title, true)
		if err != nil {
			return board.CardUpdate{}, err
		}
		next.Title = title
		if next.Title == "" || utf8.RuneCountInString(next.Title) > maxCardTitle {
			return board.CardUpdate{}, fmt.Errorf("%w: a title is 1 to %d characters", board.ErrInvalidChange, maxCardTitle)
		}
		set("title", cur.Title, next.Title)
	}
	if ch.Body != nil {
		body, err := cardText("body", *ch.Body, false)
		if err != nil {
			return board.CardUpdate{}, err
		}
		next.Body = body
		if next.Body == "" || utf8.RuneCountInString(next.Body) > maxCardBody {
			return board.CardUpdate{}, fmt.Errorf("%w: a body is 1 to %d characters", board.ErrInvalidChange, maxCardBody)
		}
		set("body", cur.Body, next.Body)
	}
	if m := ch.Criterion; m != nil {
		if m.Index < 0 || m.Index >= len(cur.AcceptanceCriteria) {
			return board.CardUpdate{}, fmt.Errorf("%w: %s has %d acceptance criteria, no number %d", board.ErrInvalidChange, cur.Handle, len(cur.AcceptanceCriteria), m.Index+1)
		}
		done := slices.Contains(cur.CriteriaDone, m.Index)
		next.CriteriaDone = slices.DeleteFunc(slices.Clone(cur.CriteriaDone), func(i int) bool { return i == m.Index })
		if m.Done {
			next.CriteriaDone = append(next.CriteriaDone, m.Index)
			slices.Sort(next.CriteriaDone)
		}
		if done != m.Done {
			set(fmt.Sprintf("criterion %d", m.Index+1), doneWord(done), doneWord(m.Done))
		}
	}
	if next.CriteriaDone == nil {
		next.CriteriaDone = []int{}
	}
	if !review {
		if err := reviewGate(ctx, tx, cur, next.Status); err != nil {
			return board.CardUpdate{}, err
		}
	}
	if next.Status != cur.Status && slices.Contains(board.Started, next.Status) {
		rows, _ := tx.Query(ctx, selectUnfinishedDeps, cur.ID)
		blockers, err := pgx.CollectRows(rows, scanCard)
		if err != nil {
			return board.CardUpdate{}, fmt.Errorf("dependencies of %s: %w", cur.ID, err)
		}
		if len(blockers) > 0 {
			return board.CardUpdate{}, &board.BlockedError{Card: cur, Status: next.Status, Blockers: blockers}
		}
	}
	var b board.Board
	if err := tx.QueryRow(ctx, selectBoard, cur.BoardID).Scan(&b.ID, &b.Name, &b.Goal, &b.Key, &b.Channel, &b.Thread, &b.CreatedAt); err != nil {
		return board.CardUpdate{}, fmt.Errorf("board of card %s: %w", cur.ID, err)
	}
	if len(changes) == 0 {
		return board.CardUpdate{Card: cur, Board: b, Changes: []board.FieldChange{}}, nil
	}
	doneJSON, _ := json.Marshal(next.CriteriaDone)
	if err := tx.QueryRow(ctx, updateCard, cur.ID, next.Status, next.Assignee, next.Title, next.Body, doneJSON).Scan(&next.Version); err != nil {
		return board.CardUpdate{}, err
	}
	detail, _ := json.Marshal(map[string]any{
		"card": cur.ID, "handle": cur.Handle, "via": ch.Via, "changes": changes, "version": next.Version,
	})
	channel := ch.Channel
	if channel == "" {
		// A change from the API or the page is filed under the board's
		// channel, so the channel's audit shows it too.
		channel = b.Channel
	}
	var auditID int64
	if err := tx.QueryRow(ctx, insertCardAudit, ch.Actor, channel, cur.BoardID, detail).Scan(&auditID); err != nil {
		return board.CardUpdate{}, err
	}
	// The notification is small (Postgres caps it at 8000 bytes); the
	// feeds read the card and the audit event it names.
	note, _ := json.Marshal(notice{Board: cur.BoardID, Card: cur.ID, Audit: auditID})
	if _, err := tx.Exec(ctx, notifyChange, string(note)); err != nil {
		return board.CardUpdate{}, err
	}
	return board.CardUpdate{Card: next, Board: b, Changes: changes, AuditID: auditID}, nil
}

func doneWord(done bool) string {
	if done {
		return "done"
	}
	return "not done"
}

// notice is the payload of a change notification.
type notice struct {
	Board board.ID     `json:"b"`
	Card  board.CardID `json:"c"`
	Audit int64        `json:"a"`
}
