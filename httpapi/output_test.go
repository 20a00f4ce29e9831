package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// outputTeller keeps the outputs it was told of.
type outputTeller struct {
	mu  sync.Mutex
	got []string
}

func (o *outputTeller) CardOutput(_ context.Context, job board.RunJob, up board.CardUpdate) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, job.Card.Handle+" "+up.Card.Status+" "+job.RunCard.Output)
}

// dispatch dispatches the next card of hook:tool and returns it with its
// token.
func dispatch(t *testing.T, s *store.Store) (board.RunJob, string) {
	t.Helper()
	var token string
	job, ok, err := s.DispatchRunCard(context.Background(), "hook:tool", func(job board.RunJob) (string, []board.OutboundEvent, error) {
		token = board.RunToken([]byte("key"), job.Run.ID, job.Card.ID, job.Holder)
		return token, []board.OutboundEvent{{MsgID: "msg_" + job.Holder, Type: "card.dispatched", Endpoints: []string{"https://tool.example/in"}, Body: []byte(`{}`)}}, nil
	})
	if err != nil || !ok {
		t.Fatalf("dispatch: %v %v", ok, err)
	}
	return job, token
}

// post posts body to path with token and content type ct.
func post(t *testing.T, srv, path, token, ct, body string) (int, map[string]any, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv+path, strings.NewReader(body))
	req.Header.Set("Content-Type", ct)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s answered %d without JSON: %v", path, resp.StatusCode, err)
	}
	return resp.StatusCode, out, resp.Header
}

// TestPostingADispatchedCardsOutput: the card token posts its card's
// output, by id or handle, once; it is refused without itself, on
// another card or run, after a new dispatch and once the run ended, and
// every bad body is answered with its status and changes nothing.
func TestPostingADispatchedCardsOutput(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{})
	out, err := s.Execute(ctx, board.Execution{ProposalID: "p_outputapi", Channel: "console:outputapi", Plan: *res.Plan})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.StartRun(ctx, board.RunStart{Board: out.BoardID, User: "alice", Trigger: "manual", Deadline: time.Hour,
		Runners: plan.Runners{ByName: map[string]plan.Runner{"planner": {Name: "hook:tool", NoReview: true}}, Others: plan.Runner{Name: "hook:tool"}}})
	if err != nil {
		t.Fatal(err)
	}
	tell := &outputTeller{}
	mux := chi.NewRouter()
	httpapi.NewOutputs(s, tell).Routes(mux)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)

	job, token := dispatch(t, s) // NEWS-1, the only card without dependencies
	if job.Card.Handle != "NEWS-1" {
		t.Fatalf("dispatched %s first", job.Card.Handle)
	}
	byID := "/api/v1/runs/" + string(r.ID) + "/cards/" + string(job.Card.ID) + "/output"
	byHandle := "/api/v1/runs/" + string(r.ID) + "/cards/news-1/output"
	var other board.RunCard
	for _, c := range r.Cards {
		if c.Handle == "NEWS-2" {
			other = c
		}
	}
	big := strings.Repeat("a", board.MaxOutput+1)
	for _, bad := range []struct {
		name, path, token, ct, body string
		code                        int
		want                        string
	}{
		{"no token", byID, "", "application/json", `{"output":"x"}`, 401, "missing card token"},
		{"unknown token", byID, "bnrc_nottherightone", "application/json", `{"output":"x"}`, 401, "unknown card token"},
		{"another card", "/api/v1/runs/" + string(r.ID) + "/cards/" + string(other.Card) + "/output", token, "application/json", `{"output":"x"}`, 403, "NEWS-1 of run"},
		{"another card by handle", "/api/v1/runs/" + string(r.ID) + "/cards/NEWS-2/output", token, "application/json", `{"output":"x"}`, 403, "only"},
		{"another run", "/api/v1/runs/run_aaaaaaaaaaaaaaaaaaaaaaaaaa/cards/NEWS-1/output", token, "application/json", `{"output":"x"}`, 403, "only"},
		{"not JSON", byID, token, "text/plain", `{"output":"x"}`, 415, "Content-Type"},
		{"bad JSON", byID, token, "application/json", `{"output":`, 400, "invalid JSON"},
		{"trailing data", byID, token, "application/json", `{"output":"x"}}`, 400, "something other than whitespace"},
		{"unknown field", byID, token, "application/json", `{"output":"x","colour":"red"}`, 400, "unknown field"},
		{"key twice", byID, token, "application/json", `{"output":"x","Output":"y"}`, 400, "a key appears twice"},
		{"no output", byID, token, "application/json", `{"status":"done"}`, 400, `"output" is required`},
		{"bad status", byID, token, "application/json", `{"output":"x","status":"approved"}`, 400, `"status"`},
		{"control character", byID, token, "application/json", `{"output":"a\u0000b"}`, 400, "plain text"},
		{"output too big", byID, token, "application/json", `{"output":"` + big + `"}`, 413, "256 KiB"},
		{"body too big", byID, token, "application/json", `{"output":"` + strings.Repeat(`\n`, board.MaxOutput+4<<10) + `"}`, 413, "larger than"},
	} {
		code, got, h := post(t, ts.URL, bad.path, bad.token, bad.ct, bad.body)
		msg, _ := got["error"].(string)
		if code != bad.code || !strings.Contains(msg, bad.want) {
			t.Errorf("%s: %d %v, want %d %q", bad.name, code, got, bad.code, bad.want)
		}
		if code == 401 && h.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", bad.name)
		}
	}
	if cur, _ := s.Run(ctx, r.ID); cur.Cards[0].Output != "" || cur.Cards[0].Status != "In Progress" {
		t.Fatalf("a refused post changed %s: %+v", cur.Cards[0].Handle, cur.Cards[0])
	}

	// The Planner's card needs no review: "status" left out, it is Done.
	code, got, _ := post(t, ts.URL, byHandle, token, "application/json", `{"output":"## The policy\n\nCite everything."}`)
	if code != 200 || got["status"] != "Done" || got["output"] != "## The policy\n\nCite everything." || got["handle"] != "NEWS-1" {
		t.Fatalf("output: %d %v", code, got)
	}
	if code, got, _ := post(t, ts.URL, byID, token, "application/json", `{"output":"again"}`); code != 409 || !strings.Contains(got["error"].(string), "not waiting for an output") {
		t.Fatalf("a second output: %d %v", code, got)
	}

	// A researcher's card: a failed attempt lets go of it with the
	// reason; it is dispatched again with a new token, and the old one is
	// refused. "done" does not skip the review its profile asks for.
	res2, tok2 := dispatch(t, s)
	path2 := "/api/v1/runs/" + string(r.ID) + "/cards/" + res2.Card.Handle + "/output"
	if code, got, _ := post(t, ts.URL, path2, tok2, "application/json", `{"output":"the sources are down","status":"failed"}`); code != 200 || got["error"] != "the sources are down" || got["attempts"] != 1.0 {
		t.Fatalf("failed: %d %v", code, got)
	}
	again, tok3 := dispatch(t, s)
	for again.Card.ID != res2.Card.ID {
		again, tok3 = dispatch(t, s)
	}
	if again.Attempt != 2 || tok3 == tok2 {
		t.Fatalf("dispatched again: attempt %d, same token %v", again.Attempt, tok3 == tok2)
	}
	if code, _, _ := post(t, ts.URL, path2, tok2, "application/json", `{"output":"late"}`); code != 401 {
		t.Fatalf("the replaced token: %d", code)
	}
	if code, got, _ := post(t, ts.URL, path2, tok3, "application/json", `{"output":"found it","status":"done"}`); code != 200 || got["status"] != "Review" {
		t.Fatalf("done under review: %d %v", code, got)
	}
	tell.mu.Lock()
	told := strings.Join(tell.got, "; ")
	tell.mu.Unlock()
	if want := "NEWS-1 Done ## The policy\n\nCite everything.; " + res2.Card.Handle + " Review found it"; told != want {
		t.Fatalf("told %q, want %q", told, want)
	}

	// Once the run has ended, its tokens are refused.
	_, tok4 := dispatch(t, s)
	if _, err := s.StopRun(ctx, r.ID, "alice"); err != nil {
		t.Fatal(err)
	}
	sc, err := s.RunTokenScope(ctx, tok4)
	if err != nil {
		t.Fatal(err)
	}
	if code, got, _ := post(t, ts.URL, "/api/v1/runs/"+string(r.ID)+"/cards/"+sc.Handle+"/output", tok4, "application/json", `{"output":"late"}`); code != 409 || !strings.Contains(got["error"].(string), "the run has ended") {
		t.Fatalf("after the run: %d %v", code, got)
	}
}
