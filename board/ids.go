package board

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/plan"
)

// ID identifies a board. It is random and unguessable, so a board link in
// chat can be shared without exposing other boards.
type ID string

// CardID identifies a card.
type CardID string

// ProposalID identifies one version of a proposed plan: "p_" and 16
// lower-case base32 characters.
type ProposalID string

// RequestID identifies one request to the bot (a mention, a webhook, a
// console message, a revision): "r_" and 16 lower-case base32 characters.
type RequestID string

// ErrMalformedID means a text is not an id BobNet could have made. Such an
// error also matches ErrNotFound: a malformed id names nothing.
var ErrMalformedID = errors.New("malformed id")

// The shapes of the ids BobNet makes: a prefix and lower-case base32
// (a-z, 2-7) without padding. Board and card ids carry 128 random bits
// (26 characters), request and proposal ids 80 bits (16 characters).
const (
	longIDChars  = 26
	shortIDChars = 16
)

// ParseID checks that s is shaped like a board id (see NewBoardID) and
// returns it as one. It says nothing of whether the board exists.
func ParseID(s string) (ID, error) {
	return parseID[ID]("board", "b_", longIDChars, s)
}

// ParseCardID checks that s is shaped like a card id (see NewCardID).
func ParseCardID(s string) (CardID, error) {
	return parseID[CardID]("card", "c_", longIDChars, s)
}

// ParseProposalID checks that s is shaped like a proposal id.
func ParseProposalID(s string) (ProposalID, error) {
	return parseID[ProposalID]("proposal", "p_", shortIDChars, s)
}

// ParseRequestID checks that s is shaped like a request id.
func ParseRequestID(s string) (RequestID, error) {
	return parseID[RequestID]("request", "r_", shortIDChars, s)
}

// idEncoding spells an id's bits: base32 without padding, in lower case
// (the standard alphabet, lower-cased).
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// spell is prefix followed by b in idEncoding, in one allocation: a
// request's id is spelled on every event's acknowledgement.
func spell(prefix string, b []byte) string {
	var buf [64]byte
	out := append(buf[:0], prefix...)
	n := len(out)
	out = append(out, make([]byte, idEncoding.EncodedLen(len(b)))...)
	idEncoding.Encode(out[n:], b)
	return string(out)
}

// newID returns prefix followed by 26 characters: 128 random bits, so a
// board link (or a run's, or a card's) cannot be guessed from another.
func newID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return spell(prefix, b[:])
}

// NewShortID returns prefix followed by 16 characters: 80 random bits,
// the size of request ids, for names that only need not collide (the
// engine's claim holders).
func NewShortID(prefix string) string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return spell(prefix, b[:])
}

// NewRequestID returns a fresh request id.
func NewRequestID() RequestID { return RequestID(NewShortID("r_")) }

// RequestIDFor is the id of a request made once per dedupe key (a
// platform's event or delivery id, scoped by its channel, as Admission's
// DedupeKey): derived from the key, so a redelivery has the first
// delivery's id and the request's record is its own dedupe mark.
func RequestIDFor(dedupeKey string) RequestID {
	var buf [128]byte
	sum := sha256.Sum256(append(append(buf[:0], "request:"...), dedupeKey...))
	return RequestID(spell("r_", sum[:10]))
}

// ProposalIDFor is the id of the proposal request r makes: derived from
// the request, so planning a request again after a crash writes the same
// proposal rather than a second one.
func ProposalIDFor(r RequestID) ProposalID {
	sum := sha256.Sum256([]byte("proposal:" + string(r)))
	return ProposalID(spell("p_", sum[:10]))
}

func parseID[T ~string](kind, prefix string, chars int, s string) (T, error) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != chars || strings.IndexFunc(rest, notBase32) >= 0 {
		return "", &malformedIDError{kind: kind, text: s}
	}
	return T(s), nil
}

// notBase32 reports whether r is outside the lower-case base32 alphabet.
func notBase32(r rune) bool {
	return (r < 'a' || r > 'z') && (r < '2' || r > '7')
}

// malformedIDError names the kind of id that was expected and (shortened)
// the text that was given.
type malformedIDError struct {
	kind, text string
}

func (e *malformedIDError) Error() string {
	text := plan.Cut(e.text, 40+len("…"), "…")
	return fmt.Sprintf("%s %q: %v", e.kind, text, ErrMalformedID)
}

// Is makes errors.Is match ErrMalformedID and ErrNotFound.
func (e *malformedIDError) Is(target error) bool {
	return target == ErrMalformedID || target == ErrNotFound
}

// NewBoardID returns a fresh random board id.
func NewBoardID() ID { return ID(newID("b_")) }

// NewCardID returns a fresh random card id.
func NewCardID() CardID { return CardID(newID("c_")) }

// RunID identifies a run of a board: "run_" and 26 lower-case base32
// characters.
type RunID string

// ParseRunID checks that s is shaped like a run id.
func ParseRunID(s string) (RunID, error) {
	return parseID[RunID]("run", "run_", longIDChars, s)
}

// NewRunID returns a fresh random run id.
func NewRunID() RunID { return RunID(newID("run_")) }

// NewHolderID returns a fresh random lease holder: the one attempt at a
// run card that may answer for it.
func NewHolderID() string { return newID("h_") }
