package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/adapters/webhook"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store/storetest"
)

const (
	ghSecret  = "gh-secret-for-tests"
	stdSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

// hookEnv is the webhook adapter in front of a real engine.
type hookEnv struct {
	*bottest.Env
	URL     string
	Adapter *webhook.Adapter
}

func newHookEnv(t *testing.T) *hookEnv {
	t.Helper()
	hooks, err := webhook.Build(map[string]string{"github": ghSecret, "forms": stdSecret}, webhook.File{Hooks: map[string]webhook.HookConfig{
		"github": {Target: "console:triage", Deciders: []string{"alice"}, Filter: webhook.Filter{Events: []string{"issues"}, Actions: []string{"labeled"}, Labels: []string{"plan-me"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	env := bottest.New(t, bottest.WithConfig(func(c *bot.Config) { c.ChannelDeciders = webhook.Deciders(hooks) }))
	plan := plannertest.NewspaperPlan(t)
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	r := chi.NewRouter()
	ad := webhook.New(hooks, env.Engine, storetest.Logger(t))
	ad.Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return &hookEnv{Env: env, URL: srv.URL, Adapter: ad}
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "webhook", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// post sends body to a hook with headers and returns the status and JSON.
func post(t testing.TB, url string, h http.Header, body []byte) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("answer is not JSON (%d): %v", resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

func githubHeaders(body []byte, event, delivery string) http.Header {
	h := http.Header{}
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", delivery)
	h.Set("X-Hub-Signature-256", signing.SHA256Signature(ghSecret, body))
	return h
}

func (e *hookEnv) deliveries(t *testing.T) int {
	t.Helper()
	var n int
	if err := e.Store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM webhook_deliveries").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestGitHubIssueBecomesProposalInTheHookChannel(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	body := fixture(t, "github-issues-labeled.json")
	status, out := post(t, e.URL+"/api/v1/hooks/github", githubHeaders(body, "issues", "d-1"), body)
	if status != http.StatusAccepted || out["request_id"] == nil {
		t.Fatalf("%d %v", status, out)
	}
	st := e.WaitRequest(t, board.RequestID(out["request_id"].(string)))
	if st.ProposalID == "" {
		t.Fatalf("no proposal: %+v", st)
	}
	p, err := e.Engine.Proposal(context.Background(), st.ProposalID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Thread.Channel.Key() != "console:triage" || p.RequestedBy != "hook:github" {
		t.Fatalf("proposal in %s by %s", p.Thread.Channel.Key(), p.RequestedBy)
	}
	if !strings.Contains(p.Request, "GitHub issue #42 in octo-org/newsroom") || !strings.Contains(p.Request, "not instructions") {
		t.Fatalf("request text not from the template:\n%s", p.Request)
	}
	reqs := e.Model.Requests()
	if len(reqs) != 1 || !strings.Contains(plannertest.LastUserMessage(reqs[0]), "Title: Daily research newspaper") {
		t.Fatalf("model saw %d requests", len(reqs))
	}
	// The audit log names the delivery the request came from.
	evs, err := e.Store.Audit(context.Background(), board.AuditFilter{Channel: "console:triage"})
	if err != nil || len(evs) == 0 || evs[0].Action != "requested" || !strings.Contains(string(evs[0].Detail), "hook:github d-1") {
		t.Fatalf("audit = %+v, %v", evs, err)
	}
	// The hook's decider may approve; someone else may not.
	if _, err := e.Engine.Approve(context.Background(), p.ID, "mallory"); err == nil {
		t.Fatal("mallory approved")
	}
	if _, err := e.Engine.Approve(context.Background(), p.ID, "alice"); err != nil {
		t.Fatalf("alice, a decider of the hook, could not approve: %v", err)
	}
	// A filtered-out delivery is ignored and leaves nothing behind.
	unlabeled := bytes.Replace(body, []byte(`"label": {"id": 208045947, "name": "plan-me"`), []byte(`"label": {"id": 1, "name": "bug"`), 1)
	status, out = post(t, e.URL+"/api/v1/hooks/github", githubHeaders(unlabeled, "issues", "d-2"), unlabeled)
	if status != http.StatusAccepted || out["status"] != "ignored" {
		t.Fatalf("filtered: %d %v", status, out)
	}
	if n := e.deliveries(t); n != 1 {
		t.Fatalf("%d deliveries recorded, want 1", n)
	}
}

func TestStandardWebhooksGenericPayload(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	body := fixture(t, "generic-text.json")
	h, _ := signing.StandardHeaders(stdSecret, "msg_form_1", time.Now(), body)
	status, out := post(t, e.URL+"/api/v1/hooks/forms", h, body)
	if status != http.StatusAccepted {
		t.Fatalf("%d %v", status, out)
	}
	st := e.WaitRequest(t, board.RequestID(out["request_id"].(string)))
	p, err := e.Engine.Proposal(context.Background(), st.ProposalID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Thread.Channel.Key() != "console:hook-forms" || !strings.Contains(p.Request, "Plan our daily research newspaper") {
		t.Fatalf("proposal in %s asking %q", p.Thread.Channel.Key(), p.Request)
	}
}

func TestRefusedDeliveriesWriteNothing(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	body := fixture(t, "github-issues-labeled.json")
	big := append([]byte(`{"text":"`), bytes.Repeat([]byte("a"), webhook.MaxBody)...)
	big = append(big, `"}`...)
	stale, _ := signing.StandardHeaders(stdSecret, "msg_old", time.Now().Add(-6*time.Minute), body)
	badJSON := []byte(`{"text": "plan`)
	tests := []struct {
		name   string
		hook   string
		h      http.Header
		body   []byte
		status int
		says   string
	}{
		{"unknown hook", "gitlab", githubHeaders(body, "issues", "r-1"), body, 404, "BOBNET_HOOK_SECRETS"},
		{"no signature", "github", http.Header{"X-Github-Delivery": {"r-2"}}, body, 401, "no signature"},
		{"wrong secret", "github", func() http.Header {
			h := githubHeaders(body, "issues", "r-3")
			h.Set("X-Hub-Signature-256", signing.SHA256Signature("guess", body))
			return h
		}(), body, 401, "does not match"},
		{"older than 5 minutes", "forms", stale, body, 401, "5 minutes"},
		{"over 1 MiB", "github", githubHeaders(big, "issues", "r-4"), big, 413, "1 MiB"},
		{"malformed JSON", "github", githubHeaders(badJSON, "issues", "r-5"), badJSON, 400, "JSON"},
		{"not an object", "github", githubHeaders([]byte(`[1]`), "issues", "r-6"), []byte(`[1]`), 400, "JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, out := post(t, e.URL+"/api/v1/hooks/"+tc.hook, tc.h, tc.body)
			msg, _ := out["error"].(string)
			if status != tc.status || !strings.Contains(msg, tc.says) {
				t.Fatalf("%d %v, want %d saying %q", status, out, tc.status, tc.says)
			}
		})
	}
	if n := e.deliveries(t); n != 0 {
		t.Fatalf("%d deliveries recorded", n)
	}
	// The request stream's shards and their count exist from the
	// engine's start; nothing else may.
	keys, err := e.Redis.Keys(context.Background(), e.Prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, e.Prefix+":requests:{") && k != e.Prefix+":streams" {
			t.Errorf("refused deliveries reached Redis: key %s", k)
		}
	}
	if n, _ := e.Queue.Len(context.Background()); n != 0 {
		t.Fatalf("refused deliveries reached Redis: %d queued", n)
	}
	if n := len(e.Model.Requests()); n != 0 {
		t.Fatalf("refused deliveries reached the model %d times", n)
	}
}

func TestConcurrentCopiesMakeOneRequest(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	body := fixture(t, "github-issues-labeled.json")
	const copies = 20
	ids := make([]string, copies)
	var wg sync.WaitGroup
	for i := range copies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, out := post(t, e.URL+"/api/v1/hooks/github", githubHeaders(body, "issues", "same-delivery"), body)
			if status != http.StatusAccepted {
				t.Errorf("copy %d: %d %v", i, status, out)
				return
			}
			ids[i] = fmt.Sprint(out["request_id"])
		}()
	}
	wg.Wait()
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("copies answered different request ids: %v", ids)
		}
	}
	st := e.WaitRequest(t, board.RequestID(ids[0]))
	if st.ProposalID == "" {
		t.Fatalf("no proposal: %+v", st)
	}
	if n := e.deliveries(t); n != 1 {
		t.Fatalf("%d delivery rows, want 1", n)
	}
	var proposals int
	_ = e.Store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM proposals").Scan(&proposals)
	if proposals != 1 || len(e.Model.Requests()) != 1 {
		t.Fatalf("%d proposals and %d model calls, want 1 and 1", proposals, len(e.Model.Requests()))
	}
}

// A redelivery whose Redis dedupe key is gone (it outlived it, or Redis
// restarted empty) gets past the ack path, but its worker finds the
// delivery in Postgres and closes it as a duplicate: no second plan.
func TestRedeliveryPastRedisIsClosedByTheWorker(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	ctx := context.Background()
	body := fixture(t, "github-issues-labeled.json")
	status, out := post(t, e.URL+"/api/v1/hooks/github", githubHeaders(body, "issues", "d-old"), body)
	if status != http.StatusAccepted {
		t.Fatalf("%d %v", status, out)
	}
	first := board.RequestID(out["request_id"].(string))
	if st := e.WaitRequest(t, first); st.ProposalID == "" {
		t.Fatalf("no proposal: %+v", st)
	}
	// The request's record is its dedupe mark (its id is derived from
	// the delivery): Redis forgets both.
	n, err := e.Redis.Del(ctx, e.Prefix+":request:"+string(first)).Result()
	if err != nil || n != 1 {
		t.Fatalf("deleting the request's record: %d, %v", n, err)
	}

	status, out = post(t, e.URL+"/api/v1/hooks/github", githubHeaders(body, "issues", "d-old"), body)
	if status != http.StatusAccepted || out["request_id"] != string(first) || out["duplicate"] == true {
		t.Fatalf("redelivery past Redis: %d %v; want taken in again under %s", status, out, first)
	}
	st := e.WaitRequest(t, first)
	if st.State != board.RequestDone || st.DuplicateOf != first || st.ProposalID != "" || st.Reply != nil {
		t.Fatalf("redelivery's request = %+v, want done as a duplicate of %s", st, first)
	}
	var proposals int
	_ = e.Store.Pool().QueryRow(ctx, "SELECT count(*) FROM proposals").Scan(&proposals)
	if proposals != 1 || len(e.Model.Requests()) != 1 || e.deliveries(t) != 1 {
		t.Fatalf("%d proposals, %d model calls, %d delivery rows; want 1 each", proposals, len(e.Model.Requests()), e.deliveries(t))
	}
}
