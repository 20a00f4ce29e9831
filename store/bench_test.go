package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store/storetest"
)

// plan64x80 is the largest plan: 64 cards and 80 links.
func plan64x80() plan.Envelope {
	a := plan.Action{Type: plan.ActionCreateBoardWithCards, Board: &plan.BoardDraft{Name: "Big board", Goal: "Benchmark"}}
	for i := range 64 {
		a.Cards = append(a.Cards, plan.CardDraft{
			TempID: fmt.Sprintf("card_%02d", i), Title: fmt.Sprintf("Card number %d", i),
			Body: "Do a well specified piece of the work and write down what was done.", Assignee: "Coder",
			Status: "Backlog", WorkspaceMode: "Scratch", AcceptanceCriteria: []string{"It works.", "It is tested."}, SuggestedSkills: []string{},
		})
	}
	for i := 1; i < 64 && len(a.Links) < 80; i++ {
		a.Links = append(a.Links, plan.Link{Card: a.Cards[i].TempID, DependsOn: a.Cards[i-1].TempID})
		if i >= 4 && len(a.Links) < 80 {
			a.Links = append(a.Links, plan.Link{Card: a.Cards[i].TempID, DependsOn: a.Cards[i-4].TempID})
		}
	}
	return plan.Envelope{Kind: plan.KindProposeActions, Actions: []plan.Action{a}}
}

func BenchmarkExecute64(b *testing.B) {
	s := storetest.NewStore(b)
	plan := plan64x80()
	if n := len(plan.Actions[0].Links); n != 80 {
		b.Fatalf("links = %d", n)
	}
	ctx := context.Background()
	i := 0
	b.ReportAllocs()
	planJSON, _ := json.Marshal(plan)
	for b.Loop() {
		i++
		// Recorded first, as the engine records every proposal it shows.
		b.StopTimer()
		id := board.ProposalID(fmt.Sprint("p_bench_", i))
		if err := s.SaveProposal(ctx, board.ProposalRecord{ID: id, Channel: "bench", RequestedBy: "bench", Plan: planJSON}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.Execute(ctx, board.Execution{ProposalID: id, Channel: "bench", ApprovedBy: "bench", Plan: plan}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecute64Baseline writes the same rows with bare pgx
// multi-row inserts in one transaction: the floor Execute stands beside.
func BenchmarkExecute64Baseline(b *testing.B) {
	pool := storetest.NewPool(b)
	plan := plan64x80()
	a := plan.Actions[0]
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		boardID := board.NewBoardID()
		ids := map[string]board.CardID{}
		var cardSQL strings.Builder
		cardSQL.WriteString(`INSERT INTO cards (id, board_id, position, number, temp_id, title, body, assignee, status, workspace_mode, acceptance_criteria) VALUES `)
		cardArgs := make([]any, 0, len(a.Cards)*9)
		for i, c := range a.Cards {
			id := board.NewCardID()
			ids[c.TempID] = id
			if i > 0 {
				cardSQL.WriteString(",")
			}
			n := len(cardArgs)
			fmt.Fprintf(&cardSQL, "($%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,$%d,'[\"It works.\",\"It is tested.\"]')", n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9, n+10)
			cardArgs = append(cardArgs, id, boardID, i, i+1, c.TempID, c.Title, c.Body, c.Assignee, c.Status, c.WorkspaceMode)
		}
		var linkSQL strings.Builder
		linkSQL.WriteString(`INSERT INTO card_links (board_id, card_id, depends_on) VALUES `)
		linkArgs := make([]any, 0, len(a.Links)*3)
		for i, l := range a.Links {
			if i > 0 {
				linkSQL.WriteString(",")
			}
			n := len(linkArgs)
			fmt.Fprintf(&linkSQL, "($%d,$%d,$%d)", n+1, n+2, n+3)
			linkArgs = append(linkArgs, boardID, ids[l.Card], ids[l.DependsOn])
		}
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO boards (id, name, goal, key) VALUES ($1, $2, $3, bobnet_board_key('console', $4))`, boardID, a.Board.Name, a.Board.Goal, board.BoardKey(a.Board.Name)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, cardSQL.String(), cardArgs...); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, linkSQL.String(), linkArgs...)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
