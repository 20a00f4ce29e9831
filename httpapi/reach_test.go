package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/adapters/console"
	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/sse"
	"github.com/bobnet/bobnet/store/storetest"
)

// tenantAPI is the whole API over a real engine and store, behind the
// token guard, with a Slack workspace's channel and a console channel
// each holding a board, a pending proposal and requests.
type tenantAPI struct {
	srv    *httptest.Server
	env    *bottest.Env
	tokens *apitoken.Tokens
	con    *console.Console
}

const bootToken = "boot-token"

func newTenantAPI(t *testing.T) *tenantAPI {
	t.Helper()
	env := bottest.New(t)
	newspaper := plannertest.NewspaperPlan(t)
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: newspaper} })
	env.Engine.Register(board.SourceSlack, bot.Registration{Poster: env.Poster})
	con := console.New(env.Engine, nil, storetest.Logger(t))
	tokens := apitoken.NewTokens(env.Store)
	logger := storetest.Logger(t)
	stream := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}
	chat := httpapi.NewChat(httpapi.ChatDeps{Engine: env.Engine, Channels: con, Successors: env.Store, Boards: env.Store,
		Requests: redisstore.NewInFlight(env.Redis, env.Prefix), Streams: sse.New(sse.Limits{})}, logger)
	chat.Unlimited()
	r := chi.NewRouter()
	httpapi.API{
		Guards:    []func(http.Handler) http.Handler{apitoken.NewGuard(tokens, bootToken, logger).Middleware},
		Chat:      chat,
		Cards:     httpapi.NewCards(env.Engine, env.Store, logger),
		Policies:  httpapi.NewPolicies(env.Store, env.Engine, logger),
		Runs:      httpapi.NewRuns(env.Store, env.Engine, plan.Runners{Others: plan.Runner{Name: "model"}}, time.Hour, "http://bobnet.test"),
		Schedules: httpapi.NewSchedules(env.Store, time.Now),
		Boards:    httpapi.NewBoards(env.Store, stream, logger),
		Outputs:   httpapi.NewOutputs(env.Store, env.Engine),
		Tokens:    httpapi.NewTokens(tokens, logger),
	}.Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return &tenantAPI{srv: srv, env: env, tokens: tokens, con: con}
}

// call sends a request with token and answers its status and body.
func (a *tenantAPI) call(t *testing.T, token, method, path, body string) (int, string) {
	t.Helper()
	code, b := bearerCall(t, a.srv.URL, token, method, path, body)
	return code, strings.TrimSpace(b)
}

// token makes a token with every scope, limited to channels.
func (a *tenantAPI) token(t *testing.T, name string, channels ...string) string {
	t.Helper()
	secret, err := a.tokens.CreateLimited(context.Background(), name, apitoken.Scopes, "", channels)
	if err != nil {
		t.Fatal(err)
	}
	return secret
}

// propose submits a request in ch and waits for its proposal.
func (a *tenantAPI) propose(t *testing.T, ch board.Channel) (board.RequestID, board.ProposalID) {
	t.Helper()
	rid, err := a.env.Engine.Submit(context.Background(), board.Request{Thread: board.Thread{Channel: ch, ID: "t1"}, User: "alice", Text: "plan our daily research newspaper"})
	if err != nil {
		t.Fatal(err)
	}
	st := a.env.WaitRequest(t, rid)
	if st.ProposalID == "" {
		t.Fatalf("no proposal: %+v", st)
	}
	return rid, st.ProposalID
}

// tenantBoard is a channel's board, approved from a proposal, with a
// pending proposal beside it.
type tenantBoard struct {
	request  board.RequestID
	approved board.ProposalID
	pending  board.ProposalID
	board    board.ID
	card     board.Card
	run      board.RunID
}

func (a *tenantAPI) board(t *testing.T, ch board.Channel) tenantBoard {
	t.Helper()
	ctx := context.Background()
	var tb tenantBoard
	tb.request, tb.approved = a.propose(t, ch)
	ap, err := a.env.Engine.Approve(ctx, tb.approved, "alice")
	if err != nil {
		t.Fatal(err)
	}
	tb.board = ap.BoardID
	_, cards, err := a.env.Store.Board(ctx, tb.board)
	if err != nil {
		t.Fatal(err)
	}
	tb.card = cards[0]
	_, tb.pending = a.propose(t, ch)
	run, err := a.env.Store.StartRun(ctx, board.RunStart{Board: tb.board, User: "alice", Trigger: "manual", Runners: plan.Runners{Others: plan.Runner{Name: "model"}}, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tb.run = run.ID
	if err := a.env.Store.SetSchedule(ctx, board.Schedule{Board: tb.board, Cron: "0 7 * * *", Timezone: "UTC", SetBy: "alice", LastSlot: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return tb
}

// requesterPolicy lets the requester decide alone, as the built-in
// policy does.
var requesterPolicy = board.Policy{Deciders: []string{"requester"}, Approvals: 1, SelfApproval: true}

const (
	policyJSON = `{"deciders":["requester"],"approvals":1,"self_approval":true}`
	adminsJSON = `{"deciders":["admins"],"approvals":1}`
)

// unknownLike is an id shaped like id that names nothing.
func unknownLike[T ~string](id T) string {
	prefix, rest, _ := strings.Cut(string(id), "_")
	return prefix + "_" + strings.Repeat("a", len(rest))
}

// TestTokenLimitedToChannels: a token limited to console:* meets the
// Slack workspace's board, cards (by id and by handle), runs, schedule,
// proposals, request, policy and board stream exactly as it meets ones
// that do not exist: the same 404 with the same body, and nothing
// changes; the console's are its to read and change, lists show only
// them, and BOBNET_API_TOKEN still reaches everything.
func TestTokenLimitedToChannels(t *testing.T) {
	t.Parallel()
	a := newTenantAPI(t)
	ctx := context.Background()
	slackCh := board.Channel{Source: board.SourceSlack, ID: "T0ONE/C0123"}
	// The console's board is the older, so a page after the Slack one
	// would hold it.
	news := a.board(t, board.Channel{Source: board.SourceConsole, ID: "newsroom"})
	slack := a.board(t, slackCh)
	// Keys are unique per tenant: the console and the workspace each have
	// a NEWS. The workspace's second board, NEWS2, has a handle only it
	// has.
	slack2 := a.board(t, board.Channel{Source: board.SourceSlack, ID: "T0ONE/C0456"})
	if err := a.env.Store.PutPolicy(ctx, "slack:T0ONE/C0123", requesterPolicy, "test"); err != nil {
		t.Fatal(err)
	}
	if err := a.env.Store.PutPolicy(ctx, "console:newsroom", requesterPolicy, "test"); err != nil {
		t.Fatal(err)
	}
	consoleOnly := a.token(t, "console-only", "console:*")

	b, nb := "/api/v1/boards/"+string(slack.board), "/api/v1/boards/"+unknownLike(slack.board)
	run, nrun := "/api/v1/runs/"+string(slack.run), "/api/v1/runs/"+unknownLike(slack.run)
	p, np := "/api/v1/proposals/"+string(slack.pending), "/api/v1/proposals/"+unknownLike(slack.pending)
	user := `{"user":"alice"}`
	for _, tc := range []struct {
		name, method, hidden, unknown, body string
	}{
		{"board", "GET", b, nb, ""},
		{"board status", "GET", b + "/status", nb + "/status", ""},
		{"board stream", "GET", b + "/events", nb + "/events", ""},
		{"board stream, query token", "GET", b + "/events?access_token=" + consoleOnly, nb + "/events?access_token=" + consoleOnly, ""},
		{"start a run", "POST", b + "/runs", nb + "/runs", user},
		{"runs", "GET", b + "/runs", nb + "/runs", ""},
		{"schedule", "GET", b + "/schedule", nb + "/schedule", ""},
		{"set the schedule", "PUT", b + "/schedule", nb + "/schedule", `{"user":"alice","cron":"0 9 * * *","timezone":"UTC"}`},
		{"remove the schedule", "DELETE", b + "/schedule", nb + "/schedule", user},
		{"card by id", "PATCH", "/api/v1/cards/" + string(slack.card.ID), "/api/v1/cards/" + unknownLike(slack.card.ID), `{"user":"alice","title":"Taken over"}`},
		{"card by handle", "PATCH", "/api/v1/cards/" + slack2.card.Handle, "/api/v1/cards/ZZZZ-99", `{"user":"alice","status":"Done"}`},
		{"run", "GET", run, nrun, ""},
		{"stop the run", "POST", run + "/stop", nrun + "/stop", user},
		{"review a run card", "POST", run + "/cards/" + slack.card.Handle + "/review", nrun + "/cards/" + slack.card.Handle + "/review", `{"user":"alice","decision":"accept"}`},
		{"proposal", "GET", p, np, ""},
		{"approved proposal", "GET", "/api/v1/proposals/" + string(slack.approved), np, ""},
		{"approve", "POST", p + "/approve", np + "/approve", user},
		{"cancel", "POST", p + "/cancel", np + "/cancel", user},
		{"withdraw", "POST", p + "/withdraw", np + "/withdraw", user},
		{"revise", "POST", p + "/revise", np + "/revise", `{"user":"alice","feedback":"more cards"}`},
		{"propose again", "POST", p + "/propose-again", np + "/propose-again", user},
		{"request", "GET", "/api/v1/requests/" + string(slack.request), "/api/v1/requests/" + unknownLike(slack.request), ""},
		{"policy", "GET", "/api/v1/policies/slack:T0ONE%2FC0123", "/api/v1/policies/slack:T0TWO%2FC0999", ""},
		{"set a policy", "PUT", "/api/v1/policies/slack:T0ONE%2FC0123", "/api/v1/policies/slack:T0TWO%2FC0999", adminsJSON},
		{"set the Slack policy", "PUT", "/api/v1/policies/slack:*", "/api/v1/policies/matrix:*", adminsJSON},
		{"set the default policy", "PUT", "/api/v1/policies/default", "/api/v1/policies/matrix:*", adminsJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hidden, hiddenBody := a.call(t, consoleOnly, tc.method, tc.hidden, tc.body)
			unknown, unknownBody := a.call(t, consoleOnly, tc.method, tc.unknown, tc.body)
			hiddenID, unknownID := pathID(tc.hidden), pathID(tc.unknown)
			if hidden != http.StatusNotFound || hidden != unknown || strings.ReplaceAll(hiddenBody, hiddenID, unknownID) != unknownBody {
				t.Fatalf("out of reach: %d %s\nunknown:      %d %s", hidden, hiddenBody, unknown, unknownBody)
			}
		})
	}

	// A page after another channel's board is the page after an unknown
	// one.
	code, after := a.call(t, consoleOnly, "GET", "/api/v1/boards?after="+string(slack.board), "")
	codeUnknown, afterUnknown := a.call(t, consoleOnly, "GET", "/api/v1/boards?after="+unknownLike(slack.board), "")
	if code != 200 || code != codeUnknown || after != afterUnknown {
		t.Errorf("boards after the Slack board: %d %s; after an unknown board: %d %s", code, after, codeUnknown, afterUnknown)
	}

	// Nothing of the Slack channel's changed.
	if pr, err := a.env.Engine.Proposal(ctx, slack.pending); err != nil || pr.State != board.ProposalPending {
		t.Fatalf("the pending proposal: %v %v", pr.State, err)
	}
	if c, err := a.env.Store.Card(ctx, slack.card.ID); err != nil || c.Title != slack.card.Title || c.Status != slack.card.Status {
		t.Fatalf("the card: %+v %v", c, err)
	}
	if r, err := a.env.Store.Run(ctx, slack.run); err != nil || r.State != "running" {
		t.Fatalf("the run: %+v %v", r.State, err)
	}
	if sc, err := a.env.Store.ScheduleOf(ctx, slack.board); err != nil || sc.Cron != "0 7 * * *" {
		t.Fatalf("the schedule: %+v %v", sc, err)
	}
	if pol, err := a.env.Store.Policy(ctx, "slack:T0ONE/C0123"); err != nil || !slices.Equal(pol.Deciders, requesterPolicy.Deciders) {
		t.Fatalf("the policy: %+v %v", pol, err)
	}
	for _, key := range []string{"slack:*", "default"} {
		if _, err := a.env.Store.Policy(ctx, key); err == nil {
			t.Fatalf("the policy %s was set", key)
		}
	}

	// The console's are its own.
	nbd := "/api/v1/boards/" + string(news.board)
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", nbd, "", 200},
		{"GET", nbd + "/status", "", 200},
		{"GET", nbd + "/events", "", 200},
		{"GET", nbd + "/runs", "", 200},
		{"GET", nbd + "/schedule", "", 200},
		{"PUT", nbd + "/schedule", `{"user":"alice","cron":"0 9 * * *","timezone":"UTC"}`, 200},
		{"PATCH", "/api/v1/cards/" + string(news.card.ID), `{"user":"alice","title":"Renamed"}`, 200},
		{"PATCH", "/api/v1/cards/" + news.card.Handle, `{"user":"alice","assignee":"Researcher"}`, 200},
		{"GET", "/api/v1/runs/" + string(news.run), "", 200},
		{"POST", "/api/v1/runs/" + string(news.run) + "/stop", user, 200},
		{"POST", nbd + "/runs", user, 201},
		{"GET", "/api/v1/proposals/" + string(news.pending), "", 200},
		{"GET", "/api/v1/requests/" + string(news.request), "", 200},
		{"GET", "/api/v1/policies/console:newsroom", "", 200},
		{"GET", "/api/v1/policies/default", "", 200},
		{"PUT", "/api/v1/policies/console:*", policyJSON, 200},
		{"POST", "/api/v1/proposals/" + string(news.pending) + "/cancel", user, 200},
		{"POST", "/api/v1/channels/newsroom/messages", `{"user":"alice","text":"what is on the board?"}`, 202},
	} {
		if code, body := a.call(t, consoleOnly, tc.method, tc.path, tc.body); code != tc.want {
			t.Errorf("%s %s: %d %s, want %d", tc.method, tc.path, code, body, tc.want)
		}
	}

	// Lists show only what it reaches; the bootstrap token sees all.
	listed := func(token, path, field, key string) []string {
		t.Helper()
		code, body := a.call(t, token, "GET", path, "")
		var out map[string]json.RawMessage
		if code != 200 || json.Unmarshal([]byte(body), &out) != nil {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		var got []string
		var list []map[string]any
		if json.Unmarshal(out[field], &list) == nil {
			for _, x := range list {
				got = append(got, x[key].(string))
			}
		} else {
			var byKey map[string]any
			_ = json.Unmarshal(out[field], &byKey)
			for k := range byKey {
				got = append(got, k)
			}
		}
		slices.Sort(got)
		return got
	}
	if got := listed(consoleOnly, "/api/v1/boards", "boards", "channel"); !slices.Equal(got, []string{"console:newsroom"}) {
		t.Errorf("boards listed to console:* = %q", got)
	}
	if got := listed(bootToken, "/api/v1/boards", "boards", "channel"); !slices.Equal(got, []string{"console:newsroom", "slack:T0ONE/C0123", "slack:T0ONE/C0456"}) {
		t.Errorf("boards listed to the bootstrap token = %q", got)
	}
	if got := listed(consoleOnly, "/api/v1/policies", "channels", ""); !slices.Equal(got, []string{"console:*", "console:newsroom"}) {
		t.Errorf("policies listed to console:* = %q", got)
	}
	if got := listed(bootToken, "/api/v1/policies", "channels", ""); !slices.Equal(got, []string{"console:*", "console:newsroom", "slack:T0ONE/C0123"}) {
		t.Errorf("policies listed to the bootstrap token = %q", got)
	}
	workspace := a.token(t, "workspace", "slack:T0ONE/*")
	if got := listed(workspace, "/api/v1/boards", "boards", "channel"); !slices.Equal(got, []string{"slack:T0ONE/C0123", "slack:T0ONE/C0456"}) {
		t.Errorf("boards listed to slack:T0ONE/* = %q", got)
	}
	if got := listed(workspace, "/api/v1/channels", "channels", "channel"); len(got) != 0 {
		t.Errorf("console channels listed to slack:T0ONE/* = %q", got)
	}
	if got := listed(consoleOnly, "/api/v1/channels", "channels", "channel"); !slices.Equal(got, []string{"newsroom"}) {
		t.Errorf("console channels listed to console:* = %q", got)
	}
	// The workspace token reaches its channel's board and its own policy
	// prefix, not the whole source's.
	for _, tc := range []struct {
		method, path, body string
		want               int
	}{
		{"GET", "/api/v1/boards/" + string(slack.board), "", 200},
		{"GET", "/api/v1/boards/" + string(news.board), "", 404},
		{"PUT", "/api/v1/policies/slack:T0ONE%2F*", policyJSON, 200},
		{"GET", "/api/v1/policies/slack:*", "", 404},
	} {
		if code, body := a.call(t, workspace, tc.method, tc.path, tc.body); code != tc.want {
			t.Errorf("workspace %s %s: %d %s, want %d", tc.method, tc.path, code, body, tc.want)
		}
	}
	for _, path := range []string{b, p, run, "/api/v1/policies/slack:T0ONE%2FC0123"} {
		if code, body := a.call(t, bootToken, "GET", path, ""); code != 200 {
			t.Errorf("bootstrap GET %s: %d %s", path, code, body)
		}
	}
}

// TestTokenLimitedToAChannel: a token for one console channel posts to
// and streams only that channel: another channel, one with a
// conversation or one never used, is the same 404, and nothing is posted
// there. A name that is no console channel (a Slack channel's key) is
// refused as it is for every token.
func TestTokenLimitedToAChannel(t *testing.T) {
	t.Parallel()
	a := newTenantAPI(t)
	newsroom := a.token(t, "newsroom", "console:newsroom")
	if code, body := a.call(t, bootToken, "POST", "/api/v1/channels/other/messages", `{"user":"bob","text":"hello"}`); code != 202 {
		t.Fatalf("bootstrap posting: %d %s", code, body)
	}
	post := `{"user":"alice","text":"plan our daily research newspaper"}`
	for _, tc := range []struct{ method, hidden, unknown, body string }{
		{"POST", "/api/v1/channels/other/messages", "/api/v1/channels/never/messages", post},
		{"GET", "/api/v1/channels/other/events", "/api/v1/channels/never/events", ""},
		{"GET", "/api/v1/channels/other/events?access_token=" + newsroom, "/api/v1/channels/never/events?access_token=" + newsroom, ""},
	} {
		hidden, hiddenBody := a.call(t, newsroom, tc.method, tc.hidden, tc.body)
		unknown, unknownBody := a.call(t, newsroom, tc.method, tc.unknown, tc.body)
		if hidden != http.StatusNotFound || unknown != hidden || strings.ReplaceAll(hiddenBody, "other", "never") != unknownBody {
			t.Errorf("%s %s: %d %s; never used: %d %s", tc.method, tc.hidden, hidden, hiddenBody, unknown, unknownBody)
		}
	}
	if code, body := a.call(t, newsroom, "POST", "/api/v1/channels/slack:C0123/messages", post); code != http.StatusBadRequest {
		t.Errorf("posting to a Slack channel: %d %s", code, body)
	}
	if code, body := a.call(t, newsroom, "POST", "/api/v1/channels/newsroom/messages", post); code != http.StatusAccepted {
		t.Fatalf("posting to its channel: %d %s", code, body)
	}
	past, _, stop := a.con.Follow("other", 0)
	stop()
	for _, ev := range past {
		if js, _ := json.Marshal(ev.Data); bytes.Contains(js, []byte("alice")) {
			t.Fatalf("alice's message reached the other channel: %s", ev.Data)
		}
	}
	for _, path := range []string{"/api/v1/channels/newsroom/events", "/api/v1/channels/newsroom/events?access_token=" + newsroom} {
		req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
		if !strings.Contains(path, "access_token") {
			req.Header.Set("Authorization", "Bearer "+newsroom)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Errorf("its own stream %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
}

// pathID is the part of a path that names the resource: the segment
// after the collection's name (boards, cards, runs, proposals, requests,
// policies, channels), query left off.
func pathID(path string) string {
	path, _, _ = strings.Cut(path, "?")
	parts := strings.Split(strings.TrimPrefix(path, "/api/v1/"), "/")
	if len(parts) < 2 {
		return path
	}
	id, _ := url.PathUnescape(parts[1])
	return id
}

// TestHandleSharedByTenants: board keys are unique per tenant, so the
// console and a workspace may each have NEWS-1. A token that reaches one
// of them changes that one; a token that reaches both is asked for the
// card's id (409), told nothing of either card, and changes neither.
func TestHandleSharedByTenants(t *testing.T) {
	t.Parallel()
	a := newTenantAPI(t)
	ctx := context.Background()
	news := a.board(t, board.Channel{Source: board.SourceConsole, ID: "newsroom"})
	slack := a.board(t, board.Channel{Source: board.SourceSlack, ID: "T0ONE/C0123"})
	if news.card.Handle != slack.card.Handle {
		t.Fatalf("handles %s and %s: each tenant's first newspaper should be NEWS", news.card.Handle, slack.card.Handle)
	}
	code, body := a.call(t, bootToken, "PATCH", "/api/v1/cards/"+news.card.Handle, `{"user":"alice","title":"Shared"}`)
	if code != http.StatusConflict || !strings.Contains(body, "name the card by its id") || strings.Contains(body, news.card.Title) || strings.Contains(body, "T0ONE") {
		t.Errorf("unlimited token, shared handle: %d %s", code, body)
	}
	workspace := a.token(t, "workspace", "slack:T0ONE/*")
	if code, body := a.call(t, workspace, "PATCH", "/api/v1/cards/"+slack.card.Handle, `{"user":"alice","title":"Theirs"}`); code != http.StatusOK || !strings.Contains(body, string(slack.card.ID)) {
		t.Errorf("workspace token, its NEWS-1: %d %s", code, body)
	}
	c, err := a.env.Store.Card(ctx, news.card.ID)
	if err != nil || c.Title != news.card.Title {
		t.Errorf("the console's card changed: %+v %v", c, err)
	}
	// A run's route names a handle among that run's cards.
	if code, body := a.call(t, bootToken, "POST", "/api/v1/runs/"+string(slack.run)+"/cards/"+slack.card.Handle+"/review", `{"user":"alice","decision":"accept"}`); code == http.StatusConflict && strings.Contains(body, "name the card by its id") {
		t.Errorf("a run's route found the handle ambiguous: %d %s", code, body)
	}
}
