package board_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
)

// malformed are texts no id parser may accept, whatever the prefix: each
// is built from a good id of the kind's prefix and length n.
func malformed(prefix string, n int) map[string]string {
	good := prefix + strings.Repeat("a", n)
	return map[string]string{
		"empty":             "",
		"prefix only":       prefix,
		"no prefix":         strings.Repeat("a", n),
		"wrong prefix":      "x_" + strings.Repeat("a", n),
		"upper case prefix": strings.ToUpper(prefix) + strings.Repeat("a", n),
		"upper case":        prefix + strings.Repeat("A", n),
		"one short":         good[:len(good)-1],
		"one long":          good + "a",
		"digit 1":           good[:len(good)-1] + "1",
		"digit 8":           good[:len(good)-1] + "8",
		"digit 0":           good[:len(good)-1] + "0",
		"padding":           good[:len(good)-1] + "=",
		"space":             " " + good,
		"newline":           good + "\n",
		"path":              "../" + good,
		"path inside":       prefix + "../" + strings.Repeat("a", n-3),
		"slash":             prefix + strings.Repeat("a", n-1) + "/",
		"unicode":           prefix + strings.Repeat("a", n-1) + "é",
		"query":             good[:len(good)-1] + "?",
		"sql":               prefix + "'; DROP TABLE boards;--",
	}
}

func TestParseIDs(t *testing.T) {
	t.Parallel()
	kinds := []struct {
		name   string
		prefix string
		n      int
		parse  func(string) (string, error)
		fresh  func() string
	}{
		{"board", "b_", 26, func(s string) (string, error) { id, err := board.ParseID(s); return string(id), err },
			func() string { return string(board.NewBoardID()) }},
		{"card", "c_", 26, func(s string) (string, error) { id, err := board.ParseCardID(s); return string(id), err },
			func() string { return string(board.NewCardID()) }},
		{"proposal", "p_", 16, func(s string) (string, error) { id, err := board.ParseProposalID(s); return string(id), err },
			func() string { return string(board.ProposalIDFor(board.NewRequestID())) }},
		{"request", "r_", 16, func(s string) (string, error) { id, err := board.ParseRequestID(s); return string(id), err },
			func() string { return string(board.NewRequestID()) }},
		// Derived ones are shaped alike.
		{"request", "r_", 16, func(s string) (string, error) { id, err := board.ParseRequestID(s); return string(id), err },
			func() string { return string(board.RequestIDFor(board.NewShortID("slack:T1:C1:Ev"))) }},
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			good := []string{k.prefix + strings.Repeat("a", k.n), k.prefix + strings.Repeat("7", k.n), k.prefix + "abcdefghijklmnopqrstuvwxyz234567"[:k.n]}
			if k.fresh != nil {
				for range 100 {
					good = append(good, k.fresh())
				}
			}
			for _, s := range good {
				if id, err := k.parse(s); err != nil || id != s {
					t.Errorf("parse %q = %q, %v", s, id, err)
				}
			}
			for what, s := range malformed(k.prefix, k.n) {
				id, err := k.parse(s)
				if err == nil || id != "" {
					t.Errorf("%s: parse %q = %q, %v; want an error", what, s, id, err)
					continue
				}
				if !errors.Is(err, board.ErrMalformedID) || !errors.Is(err, board.ErrNotFound) {
					t.Errorf("%s: error %v matches neither ErrMalformedID nor ErrNotFound", what, err)
				}
				if !strings.Contains(err.Error(), k.name) {
					t.Errorf("%s: error %q does not say it wanted a %s id", what, err, k.name)
				}
			}
			// Another kind's id is not this kind's.
			for _, other := range kinds {
				if other.prefix == k.prefix {
					continue
				}
				if _, err := k.parse(other.prefix + strings.Repeat("a", k.n)); err == nil {
					t.Errorf("a %s id parsed as a %s id", other.name, k.name)
				}
			}
		})
	}
}

func TestMalformedIDErrorIsShort(t *testing.T) {
	t.Parallel()
	_, err := board.ParseID(strings.Repeat("é", 1000))
	if msg := err.Error(); len(msg) > 120 || !strings.HasSuffix(msg, `…": malformed id`) {
		t.Fatalf("error = %q", msg)
	}
}

func TestNewIDs(t *testing.T) {
	t.Parallel()
	seen := map[board.ID]bool{}
	for range 1000 {
		id := board.NewBoardID()
		if len(id) != 28 || seen[id] {
			t.Fatalf("id %q", id)
		}
		seen[id] = true
	}
}

// A redelivery's request has the first delivery's id; another key (or
// the same event in another channel) another id.
func TestRequestIDForIsTheKeys(t *testing.T) {
	t.Parallel()
	a := board.RequestIDFor("slack:T1:C1:slack-message:C1:1700000000.000100")
	if b := board.RequestIDFor("slack:T1:C1:slack-message:C1:1700000000.000100"); a != b {
		t.Errorf("same key: %s and %s", a, b)
	}
	// The ids are what every version derived: a redelivery during a
	// rolling update finds the record an older replica stored.
	// (Python: "r_" + b32encode(sha256(b"request:" + key)[:10]).lower().)
	if a != "r_x6biuyzunshn26e5" {
		t.Errorf("RequestIDFor = %s; want r_x6biuyzunshn26e5, as derived before", a)
	}
	if p := board.ProposalIDFor("r_abc"); p != "p_6us2a6dsynq656ot" {
		t.Errorf("ProposalIDFor = %s; want p_6us2a6dsynq656ot, as derived before", p)
	}
	long := strings.Repeat("k", 300) // past RequestIDFor's buffer on the stack
	if l1, l2 := board.RequestIDFor(long), board.RequestIDFor(long); l1 != l2 || l1 == a {
		t.Error("a long key's id is not its own")
	}
	for _, other := range []string{"slack:T1:C2:slack-message:C1:1700000000.000100", "slack:T2:C1:slack-message:C1:1700000000.000100", ""} {
		if b := board.RequestIDFor(other); b == a {
			t.Errorf("key %q has the id of another: %s", other, b)
		}
	}
}
