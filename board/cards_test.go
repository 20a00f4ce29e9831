package board_test

import (
	"testing"

	"github.com/bobnet/bobnet/board"
)

func TestBoardKey(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"Daily Research Newspaper": "NEWS",
		"Q3 launch":                "LAUN",
		"ops":                      "OPS",
		"42 !!":                    "CARD",
		"<script>alert(1)":         "SCRI",
		"Ünïcode Board":            "BOAR",
	} {
		if got := board.BoardKey(name); got != want {
			t.Errorf("BoardKey(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestParseStatus(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"in progress": "In Progress", "IN-PROGRESS": "In Progress", "inprogress": "In Progress", "done": "Done", "Backlog": "Backlog", "review": "Review"} {
		if got, ok := board.ParseStatus(in); !ok || got != want {
			t.Errorf("ParseStatus(%q) = %q, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "deleted", "todo", "Done!"} {
		if got, ok := board.ParseStatus(in); ok {
			t.Errorf("ParseStatus(%q) = %q, want not ok", in, got)
		}
	}
}
