package planner

import (
	"encoding/json"
	"fmt"
	"os"
	"testing"

	"github.com/bobnet/bobnet/plan"
)

// plan64 is a 64-card plan with 80 links, the largest a plan may be.
func plan64(tb testing.TB) []byte {
	tb.Helper()
	a := plan.Action{Type: plan.ActionCreateBoardWithCards, Board: &plan.BoardDraft{Name: "Big board", Goal: "Stress the validator"}}
	for i := range 64 {
		a.Cards = append(a.Cards, plan.CardDraft{
			TempID: fmt.Sprintf("card_%02d", i), Title: fmt.Sprintf("Card number %d", i),
			Body:     "Do a well specified piece of the work and write down what was done.",
			Assignee: defaultNames[i%4], Status: plan.StatusBacklog, WorkspaceMode: plan.WorkspaceScratch,
			AcceptanceCriteria: []string{"It works.", "It is tested.", "It is documented."},
		})
	}
	for i := 1; i < 64 && len(a.Links) < 80; i++ {
		a.Links = append(a.Links, plan.Link{Card: a.Cards[i].TempID, DependsOn: a.Cards[i-1].TempID})
		if i >= 4 && len(a.Links) < 80 {
			a.Links = append(a.Links, plan.Link{Card: a.Cards[i].TempID, DependsOn: a.Cards[i-4].TempID})
		}
	}
	b, err := json.Marshal(plan.Envelope{Kind: plan.KindProposeActions, Answer: "A big plan.", Actions: []plan.Action{a}})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestPlan64IsValid(t *testing.T) {
	t.Parallel()
	res := Check(plan64(t), plan.Options{Profiles: defaultNames})
	if !res.Valid || res.Stats.Cards != 64 || res.Stats.Links != 80 {
		t.Fatalf("res = %+v %+v", res.Stats, res.Errors)
	}
}

func BenchmarkCheckNewspaper(b *testing.B) {
	raw, err := os.ReadFile("../testdata/plans/newspaper.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if res := Check(raw, plan.Options{Profiles: defaultNames}); !res.Valid {
			b.Fatal(res.Errors)
		}
	}
}

func BenchmarkCheck64Cards(b *testing.B) {
	raw := plan64(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if res := Check(raw, plan.Options{Profiles: defaultNames}); !res.Valid {
			b.Fatal(res.Errors)
		}
	}
}

// BenchmarkCheck64CardsBaseline is the floor Check64Cards stands beside:
// encoding/json decoding the same bytes into the envelope, with no
// extraction and no validation.
func BenchmarkCheck64CardsBaseline(b *testing.B) {
	raw := plan64(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		var env plan.Envelope
		if err := json.Unmarshal(raw, &env); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDraftReader64Cards reads a 64-card plan streamed in 64 pieces,
// as the preview benchmark's stand-in model sends it.
func BenchmarkDraftReader64Cards(b *testing.B) {
	raw := string(plan64(b))
	size := (len(raw) + 63) / 64
	b.ReportAllocs()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		var r DraftReader
		for i := 0; i < len(raw); i += size {
			r.Write(raw[i:min(i+size, len(raw))])
		}
		if n := len(r.Draft().Cards); n != 64 {
			b.Fatalf("%d cards", n)
		}
	}
}
