package bot

import (
	"errors"
	"testing"

	"github.com/bobnet/bobnet/board"
)

// The ids the engine makes are ones the parsers accept, and the parsers'
// errors read as "not found" to the adapters.
func TestIDsTheEngineMakesParse(t *testing.T) {
	t.Parallel()
	for range 100 {
		r := NewRequestID()
		if got, err := ParseRequestID(string(r)); err != nil || got != r {
			t.Fatalf("request id %q: %q, %v", r, got, err)
		}
		p := board.ProposalIDFor(r)
		if got, err := ParseProposalID(string(p)); err != nil || got != p {
			t.Fatalf("proposal id %q: %q, %v", p, got, err)
		}
	}
	for _, s := range []string{"", "p_x", "../p_aaaaaaaaaaaaaaaa", "r_aaaaaaaaaaaaaaaa"} {
		if _, err := ParseProposalID(s); !errors.Is(err, ErrNotFound) || !errors.Is(err, board.ErrMalformedID) {
			t.Errorf("proposal %q: %v", s, err)
		}
	}
	for _, s := range []string{"", "r_1", "../r_aaaaaaaaaaaaaaaa", "p_aaaaaaaaaaaaaaaa"} {
		if _, err := ParseRequestID(s); !errors.Is(err, ErrNotFound) || !errors.Is(err, board.ErrMalformedID) {
			t.Errorf("request %q: %v", s, err)
		}
	}
}
