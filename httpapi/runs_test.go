package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// engine tells nobody and lets everyone review.
type engine struct{ s *store.Store }

func (engine) Started(context.Context, board.Run) {}

func (e engine) ReviewRunCard(ctx context.Context, run board.RunID, card board.CardID, round int, user string, accept bool, reason string) (board.CardUpdate, error) {
	if user == "mallory" {
		return board.CardUpdate{}, fmt.Errorf("review: %w", bot.ErrForbidden)
	}
	return e.s.ReviewRunCard(ctx, run, card, round, user, accept, reason)
}

func call(t *testing.T, srv, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, srv+path, bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// TestRunsAPI: start a run (one at a time), read it, review a card by its
// handle (accept, send back with a reason), stop it; bad bodies change
// nothing.
func TestRunsAPI(t *testing.T) {
	t.Parallel()
	s := storetest.NewStore(t)
	ctx := context.Background()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{})
	out, err := s.Execute(ctx, board.Execution{ProposalID: "p_runsapi", Channel: "console:runsapi", Plan: *res.Plan})
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	httpapi.NewRuns(s, engine{s}, plan.Runners{Others: plan.Runner{Name: "model"}}, time.Hour, "http://bobnet.example").Routes(r)
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	b := "/api/v1/boards/" + string(out.BoardID)

	for _, bad := range []struct{ body, want string }{
		{`{"user":"alice"}}`, "something other than whitespace follows"},
		{`{"user":"alice","User":"bob"}`, "a key appears twice"},
		{`{"user":"alice","colour":"red"}`, "unknown field"},
		{`{}`, `"user" is required`},
	} {
		if code, got := call(t, ts.URL, "POST", b+"/runs", bad.body); code != 400 || !strings.Contains(got["error"].(string), bad.want) {
			t.Errorf("%s: %d %v", bad.body, code, got)
		}
	}
	if runs, _ := s.Runs(ctx, out.BoardID, 10); len(runs) != 0 {
		t.Fatalf("a bad body started a run: %+v", runs)
	}
	code, run := call(t, ts.URL, "POST", b+"/runs", `{"user":"alice"}`)
	if code != 201 || run["number"] != float64(1) || run["state"] != "running" || !strings.HasSuffix(run["url"].(string), "/runs/1") {
		t.Fatalf("start: %d %v", code, run)
	}
	if code, got := call(t, ts.URL, "POST", b+"/runs", `{"user":"bob"}`); code != 409 {
		t.Fatalf("second start: %d %v", code, got)
	}
	id := run["id"].(string)
	if code, got := call(t, ts.URL, "GET", "/api/v1/runs/"+id, ""); code != 200 || len(got["cards"].([]any)) != 10 {
		t.Fatalf("read: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "GET", b+"/runs", ""); code != 200 || len(got["runs"].([]any)) != 1 {
		t.Fatalf("list: %d %v", code, got)
	}

	// NEWS-1 worked by the model, then reviewed by handle.
	job, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := s.CompleteRunCard(ctx, job, "Planner", "the policy"); err != nil {
		t.Fatal(err)
	}
	review := "/api/v1/runs/" + id + "/cards/" + job.Card.Handle + "/review"
	if code, got := call(t, ts.URL, "POST", review, `{"user":"alice","decision":"send_back"}`); code != 400 || !strings.Contains(got["error"].(string), "reason") {
		t.Fatalf("send back without a reason: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "POST", review, `{"user":"alice","decision":"maybe"}`); code != 400 {
		t.Fatalf("unknown decision: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "POST", review, `{"user":"mallory","decision":"accept"}`); code != 403 {
		t.Fatalf("a review the policy refuses: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "POST", review, `{"user":"alice","decision":"send_back","reason":"cite the law"}`); code != 200 || got["status"] != "Ready" {
		t.Fatalf("send back: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "POST", review, `{"user":"alice","decision":"accept"}`); code != 409 {
		t.Fatalf("accept a card not in Review: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "POST", review, `{"user":"alice","decision":"accept","round":-1}`); code != 400 || !strings.Contains(got["error"].(string), "round") {
		t.Fatalf("a negative round: %d %v", code, got)
	}
	// Worked again (round 1): a decision on round 0 (the first output)
	// is refused and changes nothing; one on round 1 decides.
	again, ok, err := s.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if _, err := s.CompleteRunCard(ctx, again, "Planner", "the policy, cited"); err != nil {
		t.Fatal(err)
	}
	if code, got := call(t, ts.URL, "POST", review, `{"user":"alice","decision":"accept","round":0}`); code != 409 || !strings.Contains(got["error"].(string), "earlier output") {
		t.Fatalf("accept of round 0 on round 1: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "GET", "/api/v1/runs/"+id, ""); code != 200 || !strings.Contains(fmt.Sprint(got["cards"]), "status:Review") {
		t.Fatalf("after a stale accept: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "POST", review, `{"user":"alice","decision":"accept","round":1}`); code != 200 || got["status"] != "Done" {
		t.Fatalf("accept of round 1: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "POST", "/api/v1/runs/"+id+"/cards/NOPE-1/review", `{"user":"alice","decision":"accept"}`); code != 404 {
		t.Fatalf("unknown card: %d %v", code, got)
	}
	if code, got := call(t, ts.URL, "POST", "/api/v1/runs/"+id+"/stop", `{"user":"alice"}`); code != 200 || got["state"] != "stopped" || got["reason"] != "stopped by alice" {
		t.Fatalf("stop: %d %v", code, got)
	}
	if code, _ := call(t, ts.URL, "POST", "/api/v1/runs/"+id+"/stop", `{"user":"alice"}`); code != 409 {
		t.Fatalf("stop again: %d", code)
	}
	if code, _ := call(t, ts.URL, "GET", "/api/v1/runs/run_aaaaaaaaaaaaaaaaaaaaaaaaaa", ""); code != 404 {
		t.Fatalf("unknown run: %d", code)
	}
}
