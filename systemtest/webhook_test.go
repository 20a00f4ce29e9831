package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/adapters/webhook/outbox"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/signing"
	"github.com/bobnet/bobnet/store/storetest"
)

const (
	ghHookSecret   = "gh-hook-secret-for-tests"
	formsSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	callbackSecret = "whsec_Y2FsbGJhY2stc2VjcmV0LWZvci10ZXN0cw=="
	bootstrap      = "bootstrap-token"
)

// callbackReceiver is another tool hearing BobNet's events: it verifies
// each with the Standard Webhooks algorithm and can be down.
type callbackReceiver struct {
	srv  *httptest.Server
	down atomic.Bool

	mu      sync.Mutex
	got     []outbox.Payload
	ids     []string
	refused int
}

func newCallbackReceiver(t *testing.T) *callbackReceiver {
	t.Helper()
	rc := &callbackReceiver{}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := signing.VerifyStandard(r.Header, callbackSecret, body, time.Now()); err != nil {
			t.Errorf("callback does not verify: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if rc.down.Load() {
			rc.refused++
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var p outbox.Payload
		_ = json.Unmarshal(body, &p)
		rc.got = append(rc.got, p)
		rc.ids = append(rc.ids, r.Header.Get("webhook-id"))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *callbackReceiver) types() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, p := range rc.got {
		out = append(out, string(p.Type))
	}
	return out
}

func (rc *callbackReceiver) refusals() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.refused
}

// until polls cond for up to 30 seconds.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bobnet is one run of BobNet on fixed settings; boot it again on the same
// settings to restart it.
type bobnet struct {
	vars  map[string]string
	model *plannertest.Server
	url   string
	app   *testApp
	stop  func()
	bin   string // the built command, once a test ran it (tokenCmd)
}

func newBobNet(t *testing.T, hooksFile string) *bobnet {
	t.Helper()
	bottest.Redis(t)
	model := plannertest.NewServer(t)
	plan := plannertest.NewspaperPlan(t)
	model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	path := filepath.Join(t.TempDir(), "hooks.yaml")
	if err := os.WriteFile(path, []byte(hooksFile), 0o600); err != nil {
		t.Fatal(err)
	}
	return &bobnet{model: model, vars: map[string]string{
		"DATABASE_URL":        storetest.NewDatabase(t),
		"BOBNET_REDIS_PREFIX": bottest.Prefix(),
		"OPENAI_BASE_URL":     model.URL(),
		"BOBNET_API_TOKEN":    bootstrap,
		"BOBNET_HOOK_SECRETS": "github=" + ghHookSecret + ",forms=" + formsSecret,
		"BOBNET_HOOKS_FILE":   path,
	}}
}

// boot starts BobNet on b's settings (start).
func (b *bobnet) boot(t *testing.T) {
	t.Helper()
	b.app = start(t, withEnv(b.vars))
	b.url = b.app.URL
	b.stop = func() { _ = b.app.stop() }
}

// api calls the REST API with token and decodes the JSON answer.
func (b *bobnet) api(t *testing.T, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		js, _ := json.Marshal(body)
		rd = bytes.NewReader(js)
	}
	req, _ := http.NewRequest(method, b.url+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := contractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s answered %d with %q, not JSON", method, path, resp.StatusCode, ct)
	}
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// hook posts a signed delivery and returns its request id.
func (b *bobnet) hook(t *testing.T, name string, h http.Header, body []byte) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.url+"/api/v1/hooks/"+name, bytes.NewReader(body))
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := contractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	id, _ := out["request_id"].(string)
	if resp.StatusCode != http.StatusAccepted || id == "" {
		t.Fatalf("hook %s: %d %v", name, resp.StatusCode, out)
	}
	return id
}

// proposalOf waits for a request and returns its proposal.
func (b *bobnet) proposalOf(t *testing.T, requestID string) map[string]any {
	t.Helper()
	var pid string
	until(t, "request "+requestID, func() bool {
		_, r := b.api(t, bootstrap, "GET", "/api/v1/requests/"+requestID, nil)
		if r["state"] == "failed" {
			t.Fatalf("request failed: %v", r)
		}
		pid, _ = r["proposal_id"].(string)
		return r["state"] == "done"
	})
	status, p := b.api(t, bootstrap, "GET", "/api/v1/proposals/"+pid, nil)
	if status != http.StatusOK {
		t.Fatalf("proposal %s: %d %v", pid, status, p)
	}
	return p
}

// hooksFile's retries are quick, but capped at 2 s so that the receiver's
// down time, however slow a loaded machine makes it, does not use up the
// outbox's 20 attempts before the restart.
func hooksFile(receiverURL string) string {
	return fmt.Sprintf(`
hooks:
  github:
    target: console:triage
    deciders: [alice]
    filter: {events: [issues], actions: [labeled], labels: [plan-me]}
    callbacks: [{url: %q, secret: %q}]
  forms:
    deciders: [alice]
    callbacks: [{url: %q, secret: %q}]
outbound:
  allow_hosts: [127.0.0.1]
  allow_private: [127.0.0.1/32]
  retry_base: 50ms
  retry_max: 2s
`, receiverURL+"/github", callbackSecret, receiverURL+"/forms", callbackSecret)
}

// TestHooksEndToEndThroughARestart: a signed delivery becomes a proposal
// in the hook's channel with its request text from the template; approved
// over REST it becomes a board; the callback receiver, down at first,
// hears proposal.created, proposal.approved and board.created, verified,
// once BobNet has restarted.
func TestHooksEndToEndThroughARestart(t *testing.T) {
	t.Parallel()
	gh, _ := os.ReadFile(filepath.Join("..", "testdata", "webhook", "github-issues-labeled.json"))
	form, _ := os.ReadFile(filepath.Join("..", "testdata", "webhook", "generic-text.json"))
	for _, tc := range []struct {
		name, hook, channel, text string
		headers                   func(body []byte) http.Header
		body                      []byte
	}{
		{"github issue", "github", "triage", "GitHub issue #42 in octo-org/newsroom was labeled (label plan-me)", func(body []byte) http.Header {
			h := http.Header{}
			h.Set("X-GitHub-Event", "issues")
			h.Set("X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
			h.Set("X-Hub-Signature-256", signing.SHA256Signature(ghHookSecret, body))
			return h
		}, gh},
		{"standard webhooks generic", "forms", "hook-forms", "Plan our daily research newspaper", func(body []byte) http.Header {
			h, _ := signing.StandardHeaders(formsSecret, "msg_form_1", time.Now(), body)
			return h
		}, form},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := newCallbackReceiver(t)
			rc.down.Store(true)
			b := newBobNet(t, hooksFile(rc.srv.URL))
			b.boot(t)

			rid := b.hook(t, tc.hook, tc.headers(tc.body), tc.body)
			p := b.proposalOf(t, rid)
			if p["channel"] != tc.channel || !strings.Contains(fmt.Sprint(p["request"]), tc.text) {
				t.Fatalf("proposal in %v asking %q", p["channel"], p["request"])
			}
			status, out := b.api(t, bootstrap, "POST", fmt.Sprintf("/api/v1/proposals/%s/approve", p["id"]), map[string]string{"user": "alice"})
			if status != http.StatusOK || out["board_url"] == nil {
				t.Fatalf("approve: %d %v", status, out)
			}
			status, board := b.api(t, bootstrap, "GET", fmt.Sprintf("/api/v1/boards/%s", out["board_id"]), nil)
			if status != http.StatusOK || len(board["cards"].([]any)) != 10 {
				t.Fatalf("board: %d %v", status, board)
			}
			until(t, "the receiver to refuse a delivery", func() bool { return rc.refusals() > 0 })
			b.stop()

			rc.down.Store(false)
			b.boot(t) // the same database: a restart
			want := []string{"proposal.created", "proposal.approved", "board.created"}
			until(t, "the events after the restart", func() bool { return len(rc.types()) >= 3 })
			if got := rc.types(); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("events = %v, want %v", got, want)
			}
			rc.mu.Lock()
			last := rc.got[2].Data
			rc.mu.Unlock()
			if last.BoardURL != out["board_url"] || last.Actor != "alice" || string(last.ProposalID) != p["id"] {
				t.Fatalf("board.created data = %+v", last)
			}
		})
	}
}

// TestConcurrentHookCopiesThroughTheServer: 20 copies of one delivery at
// once make one request, one proposal and one delivery row.
func TestConcurrentHookCopiesThroughTheServer(t *testing.T) {
	t.Parallel()
	rc := newCallbackReceiver(t)
	b := newBobNet(t, hooksFile(rc.srv.URL))
	b.boot(t)
	body, _ := os.ReadFile(filepath.Join("..", "testdata", "webhook", "github-issues-labeled.json"))
	h := http.Header{}
	h.Set("X-GitHub-Event", "issues")
	h.Set("X-GitHub-Delivery", "copy-me")
	h.Set("X-Hub-Signature-256", signing.SHA256Signature(ghHookSecret, body))
	ids := make(chan string, 20)
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() { defer wg.Done(); ids <- b.hook(t, "github", h.Clone(), body) }()
	}
	wg.Wait()
	close(ids)
	first := ""
	for id := range ids {
		if first == "" {
			first = id
		}
		if id != first {
			t.Fatalf("copies answered %s and %s", first, id)
		}
	}
	b.proposalOf(t, first)
	until(t, "proposal.created", func() bool { return len(rc.types()) >= 1 })
	var rows, proposals int
	ctx := context.Background()
	conn, err := pgxConnect(ctx, b.vars["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM webhook_deliveries").Scan(&rows)
	_ = conn.QueryRow(ctx, "SELECT count(*) FROM proposals").Scan(&proposals)
	if rows != 1 || proposals != 1 || len(b.model.Requests()) != 1 {
		t.Fatalf("%d rows, %d proposals, %d model calls; want 1 each", rows, proposals, len(b.model.Requests()))
	}
}

func pgxConnect(ctx context.Context, url string) (*pgx.Conn, error) { return pgx.Connect(ctx, url) }

// TestBadHooksFileStopsStartNamingTheSetting: mistakes in the hooks file
// stop BobNet at start with a message naming the variable and the problem.
func TestBadHooksFileStopsStartNamingTheSetting(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ file, want string }{
		"misspelt key":        {"hooks:\n  github:\n    tagret: console:x\n", "field tagret not found"},
		"hook without secret": {"hooks:\n  gitlab: {}\n", `hook "gitlab" is in the hooks file but has no secret`},
		"host not allowed":    {"hooks:\n  github:\n    callbacks: [{url: \"https://evil.example/x\"}]\n", "not in outbound.allow_hosts"},
		"bad private range":   {"outbound:\n  allow_private: [\"localhost\"]\n", "not an address or CIDR"},
		"bad channel":         {"channels:\n  \"irc:#x\":\n    callbacks: []\n", "source must be"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newBobNet(t, tc.file)
			var err error
			start(t, withEnv(b.vars), startFails(&err))
			if err == nil || !strings.Contains(err.Error(), "BOBNET_HOOKS_FILE") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start = %v, want BOBNET_HOOKS_FILE and %q", err, tc.want)
			}
		})
	}
}
