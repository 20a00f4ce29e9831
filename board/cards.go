package board

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/bobnet/bobnet/plan"
)

// Card statuses a card may have on a board; planned cards start in the
// first two.
var Statuses = plan.CardStatuses

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

// AssignedCard is a card with the board it is on, for a person's list of
// the cards assigned to them across boards.
type AssignedCard struct {
	Card  Card
	Board Board
}

// CardEvent is one card change as live board viewers receive it: the card
// as it is after the change, and who changed which fields from where.
type CardEvent struct {
	Board   ID            `json:"board_id"`
	Card    Card          `json:"card"`
	Actor   string        `json:"actor"`
	Via     string        `json:"via"`
	Changes []FieldChange `json:"changes"`
	AuditID int64         `json:"audit_id"`
	At      time.Time     `json:"at"`
}
