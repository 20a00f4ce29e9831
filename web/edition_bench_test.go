package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store/storetest"
	"github.com/bobnet/bobnet/web"
)

// BenchmarkRunPage64 draws the run page of a 64-card chain board whose
// every card has a Markdown output of about 1.5 KB with links and a list:
// the morning edition at its largest plan.
func BenchmarkRunPage64(b *testing.B) {
	s := storetest.NewStore(b)
	ctx := context.Background()
	a := plan.Action{Type: plan.ActionCreateBoardWithCards, Board: &plan.BoardDraft{Name: "Big edition", Goal: "Benchmark"}}
	for i := range 64 {
		a.Cards = append(a.Cards, plan.CardDraft{TempID: fmt.Sprintf("c%02d", i), Title: fmt.Sprintf("Story %d", i), Body: "Write it.", Assignee: "Researcher", Status: "Backlog", WorkspaceMode: "Direct"})
		if i > 0 {
			a.Links = append(a.Links, plan.Link{Card: fmt.Sprintf("c%02d", i), DependsOn: fmt.Sprintf("c%02d", i-1)})
		}
	}
	a.Cards[0].Status = "Ready"
	res, err := s.Execute(ctx, board.Execution{ProposalID: "p_pagebench", Channel: "console:pagebench", Plan: plan.Envelope{Kind: plan.KindProposeActions, Actions: []plan.Action{a}}})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.StartRun(ctx, board.RunStart{Board: res.BoardID, User: "bench", Trigger: "manual", Deadline: time.Hour, Runners: plan.Runners{Others: plan.Runner{Name: "model", NoReview: true}}}); err != nil {
		b.Fatal(err)
	}
	output := "## A finding\n\n" + strings.Repeat("A sentence with [a source](https://example.org/a) and *emphasis*. ", 12) + "\n\n- one\n- two\n- three\n"
	for range 64 {
		job, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
		if err != nil || !ok {
			b.Fatal(ok, err)
		}
		if _, err := s.CompleteRunCard(ctx, job, "Researcher", output); err != nil {
			b.Fatal(err)
		}
	}
	r := chi.NewRouter()
	web.NewEditions(s, storetest.Logger(b)).Routes(r)
	path := "/boards/" + string(res.BoardID) + "/runs/1"
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Story 63") {
			b.Fatalf("%d", rec.Code)
		}
	}
}
