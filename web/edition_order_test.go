package web

import (
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
)

func TestInDependencyOrder(t *testing.T) {
	t.Parallel()
	cards := []board.RunCard{
		{Card: "c", Handle: "C", DependsOn: []board.CardID{"a", "b"}},
		{Card: "a", Handle: "A"},
		{Card: "d", Handle: "D", DependsOn: []board.CardID{"c"}},
		{Card: "b", Handle: "B", DependsOn: []board.CardID{"a"}},
	}
	var got []string
	for _, c := range inDependencyOrder(cards) {
		got = append(got, c.Handle)
	}
	if strings.Join(got, "") != "ABCD" {
		t.Fatalf("order = %v", got)
	}
}
