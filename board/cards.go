package board

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/bobnet/bobnet/plan"
	"github.com/jackc/pgx/v5"
)

// Errors of card changes; check with errors.Is.
var (
	// ErrInvalidChange means a change asked for something a card cannot
	// have: an unknown status, a blank title, a criterion it does not have.
	ErrInvalidChange = errors.New("invalid card change")
	// ErrBlocked is matched by *BlockedError: a card cannot start before
	// what it depends on is done.
	ErrBlocked = errors.New("card is waiting on unfinished dependencies")
	// ErrConflict is matched by *ConflictError: the card changed since the
	// version the change was based on.
	ErrConflict = errors.New("card changed since you last saw it")
	// ErrAmbiguous is matched by *AmbiguousError: a card reference fits
	// more than one card.
	ErrAmbiguous = errors.New("card reference is ambiguous")
)

// Started are the statuses that mean work on a card has begun. A card may
// enter one only when every card it depends on is Done: moving it earlier
// is refused with the blocking cards named, never done silently.
var Started = []string{"In Progress", "Review", "Done"}

// BlockedError names the unfinished cards that keep a card from starting.
type BlockedError struct {
	Card     Card
	Status   string // the status that was asked for
	Blockers []Card
}

func (e *BlockedError) Error() string {
	names := make([]string, len(e.Blockers))
	for i, b := range e.Blockers {
		names[i] = fmt.Sprintf("%s %q (%s)", b.Handle, b.Title, b.Status)
	}
	return fmt.Sprintf("%s cannot move to %s: it depends on %s, not Done yet", e.Card.Handle, e.Status, strings.Join(names, ", "))
}

// Is makes errors.Is(err, ErrBlocked) true.
func (e *BlockedError) Is(target error) bool { return target == ErrBlocked }

// ConflictError carries the card as it is now, after someone else's
// change.
type ConflictError struct {
	Current Card
	Based   int // the version the refused change was based on
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s is at version %d, not %d: someone changed it since; reload and try again", e.Current.Handle, e.Current.Version, e.Based)
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// AmbiguousError lists the cards a reference could mean.
type AmbiguousError struct {
	Ref        string
	Candidates []Card
}

func (e *AmbiguousError) Error() string {
	names := make([]string, 0, len(e.Candidates))
	for _, c := range e.Candidates {
		names = append(names, c.Handle+" "+strconv.Quote(c.Title))
	}
	return fmt.Sprintf("%q could be %s: use the handle", e.Ref, strings.Join(names, " or "))
}

// Is makes errors.Is(err, ErrAmbiguous) true.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// BoardKey derives the handle key of a board from its name: the first
// four letters and digits of its longest word, upper-cased (NEWS for
// "Daily Research Newspaper"), or CARD when the name has none that start
// with a letter.
func BoardKey(name string) string {
	best := ""
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return !isKeyRune(r) }) {
		if len(w) > len(best) && unicode.IsLetter(rune(w[0])) {
			best = w
		}
	}
	if best == "" {
		return "CARD"
	}
	if len(best) > 4 {
		best = best[:4]
	}
	return strings.ToUpper(best)
}

func isKeyRune(r rune) bool { return r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)) }

// ParseStatus returns the canonical spelling of one of the six statuses,
// matched case-insensitively and ignoring spaces, dashes and underscores
// ("in-progress", "InProgress"). ok is false for anything else.
func ParseStatus(s string) (status string, ok bool) { return plan.NormalizeStatus(s) }

// CardChange is one change to a card by a person (or an approved plan).
// Nil fields are left as they are; several set fields change together, in
// one transaction with one audit event.
type CardChange struct {
	Card CardID
	// Actor is who made the change, Via the surface it came from (slack,
	// matrix, api, page, plan) and Channel the channel key, for the audit.
	Actor, Via, Channel string
	Status              *string
	Assignee            *string
	Title               *string
	Body                *string
	Criterion           *CriterionMark
	// IfVersion, when not zero, refuses the change with a *ConflictError
	// unless the card is still at that version. Zero means the last
	// writer wins, field by field, with every change audited.
	IfVersion int
}

// CriterionMark marks one acceptance criterion (by index) done or not.
type CriterionMark struct {
	Index int  `json:"index"`
	Done  bool `json:"done"`
}

// FieldChange is one field's value before and after a change.
type FieldChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// CardUpdate is what a change did: the card as it is now, its board, and
// the fields that changed (none when the card already was as asked, in
// which case nothing was written).
type CardUpdate struct {
	Card    Card          `json:"card"`
	Board   Board         `json:"-"`
	Changes []FieldChange `json:"changes"`
	AuditID int64         `json:"audit_id,omitempty"`
}

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

	selectCardColumns = `SELECT c.id, c.board_id, c.title, c.body, c.assignee, c.status, c.workspace_mode, c.acceptance_criteria,
    c.suggested_skills, c.notes, c.number, c.version, c.criteria_done, b.key || '-' || c.number
FROM cards c JOIN boards b ON b.id = c.board_id`
	selectCard = selectCardColumns + ` WHERE c.id = $1`

	selectCardByHandle = `SELECT c.id FROM cards c JOIN boards b ON b.id = c.board_id WHERE upper(b.key) = $1 AND c.number = $2`

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
func scanCard(row pgx.CollectableRow) (Card, error) {
	var c Card
	var ac, ss, done []byte
	err := row.Scan(&c.ID, &c.BoardID, &c.Title, &c.Body, &c.Assignee, &c.Status, &c.WorkspaceMode, &ac, &ss, &c.Notes,
		&c.Number, &c.Version, &done, &c.Handle)
	if err == nil {
		err = errors.Join(json.Unmarshal(ac, &c.AcceptanceCriteria), json.Unmarshal(ss, &c.SuggestedSkills), json.Unmarshal(done, &c.CriteriaDone))
	}
	c.DependsOn = []CardID{}
	return c, err
}

// readCard reads one card with its dependencies. ErrNotFound when there is
// no such card.
func readCard(ctx context.Context, q querier, sql string, id CardID) (Card, error) {
	rows, _ := q.Query(ctx, sql, id)
	c, err := pgx.CollectExactlyOneRow(rows, scanCard)
	if errors.Is(err, pgx.ErrNoRows) {
		return Card{}, fmt.Errorf("card %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Card{}, fmt.Errorf("card %s: %w", id, err)
	}
	rows, _ = q.Query(ctx, selectCardDeps, id)
	deps, err := pgx.CollectRows(rows, pgx.RowTo[CardID])
	if err != nil {
		return Card{}, fmt.Errorf("dependencies of card %s: %w", id, err)
	}
	c.DependsOn = append(c.DependsOn, deps...)
	return c, nil
}

// Card returns one card with the ids of the cards it depends on.
// ErrNotFound when there is no such card.
func (s *Store) Card(ctx context.Context, id CardID) (Card, error) {
	return readCard(ctx, s.pool, selectCard, id)
}

// ParseHandle splits a card handle such as NEWS-3 into its board key
// (upper case) and number; ok is false when s is not shaped like one.
func ParseHandle(s string) (key string, number int, ok bool) {
	key, num, found := strings.Cut(strings.TrimSpace(s), "-")
	if !found || key == "" || len(key) > 6 {
		return "", 0, false
	}
	for _, r := range key {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return "", 0, false
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 || strings.HasPrefix(num, "+") {
		return "", 0, false
	}
	return strings.ToUpper(key), n, true
}

// CardByHandle finds a card by its handle (NEWS-3, any case), which board
// keys being unique makes one card wherever it is used. ErrNotFound when
// the handle is malformed or names no card.
func (s *Store) CardByHandle(ctx context.Context, handle string) (Card, error) {
	key, n, ok := ParseHandle(handle)
	if !ok {
		return Card{}, fmt.Errorf("card %q: not a handle such as NEWS-3: %w", handle, ErrNotFound)
	}
	var id CardID
	err := s.pool.QueryRow(ctx, selectCardByHandle, key, n).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return Card{}, fmt.Errorf("card %s-%d: %w", key, n, ErrNotFound)
	}
	if err != nil {
		return Card{}, fmt.Errorf("card %s-%d: %w", key, n, err)
	}
	return s.Card(ctx, id)
}

// FindCard resolves what a person calls a card on a board: its handle
// (NEWS-3, news-3, #3 or 3), its id, or a case-insensitive prefix of its
// title that fits one card (an exact title wins over prefixes).
// ErrNotFound when nothing fits; *AmbiguousError when several do.
func (s *Store) FindCard(ctx context.Context, id ID, ref string) (Card, error) {
	b, cards, err := s.Board(ctx, id)
	if err != nil {
		return Card{}, err
	}
	return MatchCard(b, cards, ref)
}

// MatchCard is FindCard on a board already read.
func MatchCard(b Board, cards []Card, ref string) (Card, error) {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return Card{}, fmt.Errorf("no card named: %w", ErrNotFound)
	}
	num := strings.TrimPrefix(ref, "#")
	if key, n, ok := strings.Cut(num, "-"); ok && strings.EqualFold(key, b.Key) {
		num = n
	}
	if n, err := strconv.Atoi(num); err == nil {
		for _, c := range cards {
			if c.Number == n {
				return c, nil
			}
		}
	}
	var prefix []Card
	lower := strings.ToLower(ref)
	for _, c := range cards {
		switch {
		case string(c.ID) == ref:
			return c, nil
		case strings.EqualFold(c.Title, ref):
			return c, nil
		case strings.HasPrefix(strings.ToLower(c.Title), lower):
			prefix = append(prefix, c)
		}
	}
	switch len(prefix) {
	case 0:
		return Card{}, fmt.Errorf("no card %q on board %s (%s): %w", ref, b.Name, b.Key, ErrNotFound)
	case 1:
		return prefix[0], nil
	}
	return Card{}, &AmbiguousError{Ref: ref, Candidates: prefix}
}

// ChangeCard applies one change to a card in one transaction: the card is
// locked, checked and written, and an audit event records who changed what,
// from where, with every field's value before and after. Other
// processes learn of it through their Feed. ErrNotFound: no such card.
// ErrInvalidChange, *BlockedError, *ConflictError: refused, nothing
// written.
func (s *Store) ChangeCard(ctx context.Context, ch CardChange) (CardUpdate, error) {
	var up CardUpdate
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var err error
		up, err = changeCard(ctx, tx, ch)
		return err
	})
	if err != nil {
		return CardUpdate{}, fmt.Errorf("change card %s: %w", ch.Card, err)
	}
	return up, nil
}

// cardText checks a card's text with the check plans get
// (plan.CheckText), so every way text reaches a card (a plan, the API,
// the board page, a chat command) is held to the same rules.
func cardText(field, s string, line bool) (string, error) {
	out, err := plan.CheckText(s, line)
	if err != nil {
		return "", fmt.Errorf("%w: the %s %v; card text is plain text", ErrInvalidChange, field, err)
	}
	return strings.TrimSpace(out), nil
}

// changeCard is ChangeCard inside the caller's transaction, so an approved
// plan's card updates commit with the rest of the plan.
func changeCard(ctx context.Context, tx querier, ch CardChange) (CardUpdate, error) {
	cur, err := readCard(ctx, tx, selectCardForUpdate, ch.Card)
	if err != nil {
		return CardUpdate{}, err
	}
	if ch.IfVersion != 0 && ch.IfVersion != cur.Version {
		return CardUpdate{}, &ConflictError{Current: cur, Based: ch.IfVersion}
	}
	next := cur
	var changes []FieldChange
	set := func(field, from, to string) {
		if from != to {
			changes = append(changes, FieldChange{Field: field, From: from, To: to})
		}
	}
	if ch.Status != nil {
		st, ok := ParseStatus(*ch.Status)
		if !ok {
			return CardUpdate{}, fmt.Errorf("%w: status %q is not one of %s", ErrInvalidChange, *ch.Status, strings.Join(Statuses, ", "))
		}
		next.Status = st
		set("status", cur.Status, st)
	}
	if ch.Assignee != nil {
		assignee, err := cardText("assignee", *ch.Assignee, true)
		if err != nil {
			return CardUpdate{}, err
		}
		next.Assignee = assignee
		if utf8.RuneCountInString(next.Assignee) > maxCardAssignee {
			return CardUpdate{}, fmt.Errorf("%w: assignee is longer than %d characters", ErrInvalidChange, maxCardAssignee)
		}
		set("assignee", cur.Assignee, next.Assignee)
	}
	if ch.Title != nil {
		title, err := cardText("title", *ch.Title, true)
		if err != nil {
			return CardUpdate{}, err
		}
		next.Title = title
		if next.Title == "" || utf8.RuneCountInString(next.Title) > maxCardTitle {
			return CardUpdate{}, fmt.Errorf("%w: a title is 1 to %d characters", ErrInvalidChange, maxCardTitle)
		}
		set("title", cur.Title, next.Title)
	}
	if ch.Body != nil {
		body, err := cardText("body", *ch.Body, false)
		if err != nil {
			return CardUpdate{}, err
		}
		next.Body = body
		if next.Body == "" || utf8.RuneCountInString(next.Body) > maxCardBody {
			return CardUpdate{}, fmt.Errorf("%w: a body is 1 to %d characters", ErrInvalidChange, maxCardBody)
		}
		set("body", cur.Body, next.Body)
	}
	if m := ch.Criterion; m != nil {
		if m.Index < 0 || m.Index >= len(cur.AcceptanceCriteria) {
			return CardUpdate{}, fmt.Errorf("%w: %s has %d acceptance criteria, no number %d", ErrInvalidChange, cur.Handle, len(cur.AcceptanceCriteria), m.Index+1)
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
	if next.Status != cur.Status && slices.Contains(Started, next.Status) {
		rows, _ := tx.Query(ctx, selectUnfinishedDeps, cur.ID)
		blockers, err := pgx.CollectRows(rows, scanCard)
		if err != nil {
			return CardUpdate{}, fmt.Errorf("dependencies of %s: %w", cur.ID, err)
		}
		if len(blockers) > 0 {
			return CardUpdate{}, &BlockedError{Card: cur, Status: next.Status, Blockers: blockers}
		}
	}
	var b Board
	if err := tx.QueryRow(ctx, selectBoard, cur.BoardID).Scan(&b.ID, &b.Name, &b.Goal, &b.Key, &b.Channel, &b.Thread, &b.CreatedAt); err != nil {
		return CardUpdate{}, fmt.Errorf("board of card %s: %w", cur.ID, err)
	}
	if len(changes) == 0 {
		return CardUpdate{Card: cur, Board: b, Changes: []FieldChange{}}, nil
	}
	doneJSON, _ := json.Marshal(next.CriteriaDone)
	if err := tx.QueryRow(ctx, updateCard, cur.ID, next.Status, next.Assignee, next.Title, next.Body, doneJSON).Scan(&next.Version); err != nil {
		return CardUpdate{}, err
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
		return CardUpdate{}, err
	}
	// The notification is small (Postgres caps it at 8000 bytes); the
	// feeds read the card and the audit event it names.
	note, _ := json.Marshal(notice{Board: cur.BoardID, Card: cur.ID, Audit: auditID})
	if _, err := tx.Exec(ctx, notifyChange, string(note)); err != nil {
		return CardUpdate{}, err
	}
	return CardUpdate{Card: next, Board: b, Changes: changes, AuditID: auditID}, nil
}

func doneWord(done bool) string {
	if done {
		return "done"
	}
	return "not done"
}

// notice is the payload of a change notification.
type notice struct {
	Board ID     `json:"b"`
	Card  CardID `json:"c"`
	Audit int64  `json:"a"`
}
