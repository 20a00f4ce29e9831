package board_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
)

// TestValidConsoleName holds the loop to the rule as a pattern says it.
func TestValidConsoleName(t *testing.T) {
	t.Parallel()
	rule := regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	names := []string{"", "a", "general", "hook-github", "ops_2", "-x", "_x", "x-", "Upper", "a b", "a.b", "é", "a\x00",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65), "9" + strings.Repeat("-", 63), "9" + strings.Repeat("-", 64)}
	for c := 0; c < 256; c++ {
		names = append(names, "a"+string(rune(c)), string([]byte{byte(c)}))
	}
	for _, n := range names {
		if got, want := board.ValidConsoleName(n), rule.MatchString(n); got != want {
			t.Errorf("ValidConsoleName(%q) = %v, the rule says %v", n, got, want)
		}
	}
}
