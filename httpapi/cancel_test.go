package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/adapters/console"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/sse"
	"github.com/bobnet/bobnet/store/storetest"
)

// POST /api/v1/proposals/{id}/cancel takes an optional reason: kept in
// the audit, returned with the proposal, refused past its bound.
func TestAPICancelWithReason(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	plan := plannertest.NewspaperPlan(t)
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	con := console.New(env.Engine, nil, storetest.Logger(t))
	env.Engine.Register(board.SourceConsole, bot.Registration{Poster: con})
	r := chi.NewRouter()
	httpapi.NewChat(httpapi.ChatDeps{Engine: env.Engine, Channels: con, Successors: env.Store, Boards: env.Store, Requests: redisstore.NewInFlight(env.Redis, env.Prefix), Streams: sse.New(sse.Limits{})}, storetest.Logger(t)).Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	rid, err := env.Engine.Submit(ctx, board.Request{Thread: board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "news"}}, User: "alice", Text: "plan a daily research newspaper"})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, rid)
	post := func(body string) (int, map[string]any) {
		resp, err := http.Post(srv.URL+"/api/v1/proposals/"+string(st.ProposalID)+"/cancel", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	if code, out := post(`{"user":"alice","reason":"` + strings.Repeat("é", bot.MaxCancelReason+1) + `"}`); code != http.StatusBadRequest {
		t.Fatalf("a long reason: %d %v", code, out)
	}
	if p, _ := env.Engine.Proposal(ctx, st.ProposalID); p.State != board.ProposalPending {
		t.Fatalf("a refused reason cancelled: %s", p.State)
	}
	code, out := post(`{"user":"alice","reason":"` + strings.Repeat("é", bot.MaxCancelReason-20) + ` <b>x</b>"}`)
	want := strings.Repeat("é", bot.MaxCancelReason-20) + " <b>x</b>"
	if code != http.StatusOK || out["state"] != "cancelled" || out["reason"] != want {
		t.Fatalf("cancel: %d %v", code, out)
	}
	evs, err := env.Store.Audit(ctx, board.AuditFilter{ProposalID: st.ProposalID})
	if err != nil {
		t.Fatal(err)
	}
	var detail map[string]any
	if last := evs[len(evs)-1]; last.Action != "cancelled" || json.Unmarshal(last.Detail, &detail) != nil || detail["reason"] != want {
		t.Fatalf("audit = %+v", evs)
	}
	// Without a reason it still cancels (another proposal).
	rid, _ = env.Engine.Submit(ctx, board.Request{Thread: board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "news"}}, User: "alice", Text: "plan it again"})
	st = env.WaitRequest(t, rid)
	if code, out := post(`{"user":"alice"}`); code != http.StatusOK || out["state"] != "cancelled" || out["reason"] != nil {
		t.Fatalf("cancel without a reason: %d %v", code, out)
	}
}
