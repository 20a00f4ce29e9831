package planner_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// readDraft feeds raw to a reader in pieces of size n (all at once for 0)
// and returns the draft and how many writes reported a change.
func readDraft(raw string, n int) (planner.Draft, int) {
	var r planner.DraftReader
	if n <= 0 {
		n = len(raw) + 1
	}
	changes := 0
	for i := 0; i < len(raw); i += n {
		if r.Write(raw[i:min(i+n, len(raw))]) {
			changes++
		}
	}
	return r.Draft(), changes
}

// The newspaper plan read piece by piece, at any piece size, yields the
// board's title and its ten cards as the validation reads them, each once.
func TestDraftReaderReadsThePlanCardByCard(t *testing.T) {
	t.Parallel()
	raw := plannertest.NewspaperPlan(t)
	res := planner.Check([]byte(raw), opts)
	if !res.Valid {
		t.Fatal(res.Errors)
	}
	a := res.Plan.Actions[0]
	for _, n := range []int{0, 1, 2, 3, 7, 64, 1000} {
		d, changes := readDraft(raw, n)
		if d.Title != a.Board.Name {
			t.Errorf("pieces of %d: title %q, want %q", n, d.Title, a.Board.Name)
		}
		if len(d.Cards) != len(a.Cards) {
			t.Fatalf("pieces of %d: %d cards, want %d", n, len(d.Cards), len(a.Cards))
		}
		for i, c := range d.Cards {
			want := a.Cards[i]
			if c.Title != want.Title || c.TempID != want.TempID || c.Assignee != want.Assignee || len(c.AcceptanceCriteria) != len(want.AcceptanceCriteria) {
				t.Errorf("pieces of %d: card %d = %+v, want %+v", n, i, c, want)
			}
		}
		if n == 1 && changes != 11 {
			t.Errorf("byte by byte: %d changes, want 11 (the title, then each card)", changes)
		}
	}
}

// A card shows as soon as its object closes, before the rest arrives.
func TestDraftReaderShowsACardOnceItsObjectCloses(t *testing.T) {
	t.Parallel()
	var r planner.DraftReader
	steps := []struct {
		piece string
		cards int
		title string
	}{
		{`{"kind":"propose_actions","actions":[{"type":"create_board_with_cards","board":{"name":"Daily `, 0, ""},
		{`News","goal":"g"},"cards":[{"temp_id":"a","title":"Research {today}","body":"b \"quoted\" }"`, 0, "Daily News"},
		{`,"assignee":"Researcher"}`, 1, "Daily News"},
		{`,{"temp_id":"b","title":"   Write\n the   edition ","acceptance_criteria":["ok", 3, ""]},{"title":`, 2, "Daily News"},
	}
	for i, s := range steps {
		r.Write(s.piece)
		d := r.Draft()
		if len(d.Cards) != s.cards || d.Title != s.title {
			t.Fatalf("after piece %d: %d cards, title %q; want %d, %q", i, len(d.Cards), d.Title, s.cards, s.title)
		}
	}
	d := r.Draft()
	if d.Cards[0].Title != "Research {today}" || d.Cards[0].Assignee != "Researcher" || d.Cards[1].Title != "Write the edition" ||
		!reflect.DeepEqual(d.Cards[1].AcceptanceCriteria, []string{"ok"}) {
		t.Errorf("cards = %+v", d.Cards)
	}
	// A draft handed out keeps its cards as later pieces add some, and a
	// card the caller appends does not reach the reader.
	r.Write(`"Edit","assignee":"Reviewer"}]}]}`)
	if len(d.Cards) != 2 || len(r.Draft().Cards) != 3 {
		t.Fatalf("a draft handed out has %d cards, the reader %d; want 2 and 3", len(d.Cards), len(r.Draft().Cards))
	}
	_ = append(d.Cards, plan.CardDraft{Title: "the caller's"})
	if got := r.Draft().Cards[2].Title; got != "Edit" {
		t.Errorf("the reader's third card is %q after the caller appended to its draft", got)
	}
}

// Broken or foreign output gives fewer cards, never a wrong one: prose
// with braces, reasoning blocks with a plan-like object, a card whose
// object is not JSON, an answer that is not a plan, a card without a
// title, cards outside an action's "cards".
func TestDraftReaderToleratesBrokenOutput(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		raw    string
		titles []string
	}{
		"prose and fences": {"Sure, use {name} here:\n```json\n" + `{"actions":[{"cards":[{"title":"A"}]}]}` + "\n```", []string{"A"}},
		"reasoning block":  {`<THINK>{"actions":[{"cards":[{"title":"not this"}]}]}</think>{"actions":[{"cards":[{"title":"B"}]}]}`, []string{"B"}},
		"broken card":      {`{"actions":[{"cards":[{"title":"A"},{"title":"B" "body":"x"},{"title":"C"}]}]}`, []string{"A", "C"}},
		"not a plan":       {`{"kind":"answer","answer":"{\"cards\":[{\"title\":\"no\"}]}"}`, nil},
		"no title":         {`{"actions":[{"cards":[{"temp_id":"a"},{"title":7},{"title":"  "}]}]}`, nil},
		"cards elsewhere":  {`{"cards":[{"title":"no"}],"actions":[{"board":{"cards":[{"title":"no"}]},"links":[{"title":"no"}]}]}`, nil},
		"wrong closers":    {`{"actions":[{"cards":[{"title":"A"}}]]}{"actions":[{"cards":[{"title":"B"}]}]}`, []string{"A", "B"}},
		"truncated":        {`{"actions":[{"cards":[{"title":"A"},{"title":"B`, []string{"A"}},
		"unclosed think":   {`<think>{"actions":[{"cards":[{"title":"no"}]}]}`, nil},
		"deep":             {strings.Repeat(`{"a":`, 70) + `{"actions":[{"cards":[{"title":"no"}]}]}`, nil},
	} {
		for _, n := range []int{0, 1, 5} {
			d, _ := readDraft(tc.raw, n)
			var titles []string
			for _, c := range d.Cards {
				titles = append(titles, c.Title)
			}
			if !reflect.DeepEqual(titles, tc.titles) {
				t.Errorf("%s, pieces of %d: titles %q, want %q", name, n, titles, tc.titles)
			}
		}
	}
}

// Past MaxRawOutput the reader stops and keeps what it had.
func TestDraftReaderStopsPastTheCap(t *testing.T) {
	t.Parallel()
	var r planner.DraftReader
	r.Write(`{"actions":[{"cards":[{"title":"A"},`)
	if r.Write(strings.Repeat(" ", planner.MaxRawOutput)) || r.Write(`{"title":"B"}]}]}`) {
		t.Error("the reader read past the cap")
	}
	if d := r.Draft(); len(d.Cards) != 1 {
		t.Errorf("cards = %+v", d.Cards)
	}
	r.Reset()
	if !r.Write(`{"actions":[{"cards":[{"title":"C"}]}]}`) || r.Draft().Cards[0].Title != "C" {
		t.Errorf("after Reset: %+v", r.Draft())
	}
}

// FuzzDraftReader feeds arbitrary output in arbitrary pieces: the reader
// never panics, every card it yields has a title, and the draft does not
// depend on how the output was cut into pieces.
func FuzzDraftReader(f *testing.F) {
	files, err := filepath.Glob("../testdata/plans/*")
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(7))
	}
	f.Add([]byte(`<think>{</think>{"actions":[{"cards":[{"title":"}"}]}]}`), uint8(1))
	f.Add([]byte(`<reas`), uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, size uint8) {
		whole, _ := readDraft(string(raw), 0)
		pieces, _ := readDraft(string(raw), int(size%32)+1)
		if !reflect.DeepEqual(whole, pieces) {
			t.Fatalf("whole %+v != in pieces of %d %+v", whole, size%32+1, pieces)
		}
		for _, c := range whole.Cards {
			if strings.TrimSpace(c.Title) == "" || len(c.Title) > 200 {
				t.Fatalf("card title %q", c.Title)
			}
		}
	})
}
