package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

func TestConsoleEventsAreKeptNewestFirstAndTrimmed(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	at := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	for i := int64(1); i <= 7; i++ {
		ev := board.ConsoleEvent{ID: i, Type: "message", At: at.Add(time.Duration(i) * time.Minute), Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		if err := s.AppendConsoleEvent(ctx, "newsroom", ev, 5); err != nil {
			t.Fatal(err)
		}
	}
	// Written twice (a retry): the first stays.
	if err := s.AppendConsoleEvent(ctx, "newsroom", board.ConsoleEvent{ID: 7, Type: "reply", At: at, Data: json.RawMessage(`{}`)}, 5); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendConsoleEvent(ctx, "quiet", board.ConsoleEvent{ID: 1, Type: "reply", At: at, Data: json.RawMessage(`{}`)}, 5); err != nil {
		t.Fatal(err)
	}
	evs, err := s.ConsoleEvents(ctx, "newsroom", 200)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, e := range evs {
		ids = append(ids, e.ID)
	}
	if fmt.Sprint(ids) != "[3 4 5 6 7]" || evs[4].Type != "message" || string(evs[4].Data) != `{"n": 7}` {
		t.Fatalf("kept %v, last %+v", ids, evs[len(evs)-1])
	}
	if evs, _ := s.ConsoleEvents(ctx, "newsroom", 2); len(evs) != 2 || evs[0].ID != 6 {
		t.Fatalf("newest two: %+v", evs)
	}
	if evs, err := s.ConsoleEvents(ctx, "never", 200); err != nil || len(evs) != 0 {
		t.Fatalf("unknown channel: %v %v", evs, err)
	}
	chs, err := s.ConsoleChannels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(chs) != 2 || chs[0].Channel != "newsroom" || chs[0].Events != 5 || !chs[0].Latest.Equal(at.Add(7*time.Minute)) || chs[1].Channel != "quiet" {
		t.Fatalf("channels: %+v", chs)
	}
}

func TestBoardsListNewestFirstInPages(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	var made []board.ID
	for i := range 5 {
		res, err := s.Execute(ctx, board.Execution{ProposalID: board.ProposalID(fmt.Sprintf("p_list%d", i)), Channel: "console:list", Plan: newspaper(t)})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, res.BoardID)
	}
	var seen []board.ID
	var after board.ID
	for page := 0; ; page++ {
		list, next, err := s.Boards(ctx, after, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range list {
			if l.Cards != 10 || l.Counts["Backlog"]+l.Counts["Ready"] != 10 || l.Key == "" {
				t.Errorf("listing %+v", l)
			}
			seen = append(seen, l.ID)
		}
		if next == "" {
			break
		}
		if page > 5 {
			t.Fatal("pages never end")
		}
		after = next
	}
	if len(seen) != 5 {
		t.Fatalf("listed %v", seen)
	}
	for i, id := range seen {
		if id != made[len(made)-1-i] {
			t.Fatalf("order %v, made %v", seen, made)
		}
	}
}
