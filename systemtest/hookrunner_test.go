package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bobnet/bobnet/adapters/webhook/outbox"
	"github.com/bobnet/bobnet/adapters/webhook/outbox/outboxtest"
)

// toolSecret is the inbound secret of the hook "tool"; its callbacks are
// signed with BOBNET_CALLBACK_SECRET, never with it.
const toolSecret = "whsec_dG9vbC1pbmJvdW5kLXNlY3JldC1mb3ItdGVzdHM="

// toolProfilesDir writes the four profiles the newspaper names, every
// one worked by the hook "tool"; the Planner's outputs need no review.
func toolProfilesDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, review := range map[string]string{"Researcher": "always", "Planner": "none", "Reviewer": "always", "Coder": "always"} {
		sub := filepath.Join(dir, strings.ToLower(name))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		md := fmt.Sprintf("---\nname: %s\ndescription: The %s of the newspaper.\nrunner: hook:tool\nreview: %s\n---\nWork the card.\n", name, name, review)
		if err := os.WriteFile(filepath.Join(sub, "AGENT.md"), []byte(md), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// postOutput posts a dispatched card's output with token to path.
func (b *bobnet) postOutput(t *testing.T, token, path string, body any) (int, map[string]any) {
	t.Helper()
	js, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, b.url+path, bytes.NewReader(js))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := contractClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("POST %s: %d: %v", path, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// TestHookRunnerEndToEnd: a board whose every card's assignee has
// `runner: hook:tool`. Started, the run sends each card, wave by wave, as
// card.dispatched to the tool's callback, which checks it with the
// official standardwebhooks npm package and posts the output with the
// card's token; reviews accept them (one is sent back, and comes again
// with the reason and a new token, the old one refused); the run ends
// done, and the run's API and page show every output. The card token is
// refused on every other route, on another card, on another run and once
// its run has ended.
func TestHookRunnerEndToEnd(t *testing.T) {
	t.Parallel()
	node := outboxtest.StartNode(t, callbackSecret)
	b := newBobNet(t, fmt.Sprintf(`
hooks:
  tool:
    callbacks: [{url: %q}]
channels:
  console:newsroom:
    callbacks: [{url: %q}]
outbound:
  allow_hosts: [127.0.0.1]
  allow_private: [127.0.0.1/32]
  retry_base: 50ms
  retry_max: 1s
`, node.URL+"/tool", node.URL+"/newsroom"))
	b.vars["BOBNET_HOOK_SECRETS"] += ",tool=" + toolSecret
	b.vars["BOBNET_CALLBACK_SECRET"] = callbackSecret
	b.vars["BOBNET_PROFILES_DIR"] = toolProfilesDir(t)
	b.boot(t) // its runs' worker hands the tool's cards to the hook

	status, msg := b.api(t, bootstrap, "POST", "/api/v1/channels/newsroom/messages", map[string]string{"user": "alice", "text": "plan our daily research newspaper"})
	if status != http.StatusAccepted {
		t.Fatalf("message: %d %v", status, msg)
	}
	p := b.proposalOf(t, msg["request_id"].(string))
	status, approved := b.api(t, bootstrap, "POST", fmt.Sprintf("/api/v1/proposals/%s/approve", p["id"]), map[string]string{"user": "alice"})
	if status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, approved)
	}
	boardID := approved["board_id"].(string)
	status, run := b.api(t, bootstrap, "POST", "/api/v1/boards/"+boardID+"/runs", map[string]string{"user": "alice"})
	if status != http.StatusCreated {
		t.Fatalf("start: %d %v", status, run)
	}
	runID := run["id"].(string)
	outputPath := func(run, card string) string { return "/api/v1/runs/" + run + "/cards/" + card + "/output" }

	handled := 0
	tokens := map[string][]string{} // handle -> the tokens of its dispatches
	cardIDs := map[string]string{}
	sentBack := false
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, cur := b.api(t, bootstrap, "GET", "/api/v1/runs/"+runID, nil)
		if cur["state"] == "done" {
			break
		}
		if cur["state"] != "running" || time.Now().After(deadline) {
			t.Fatalf("the run did not finish: %v", cur)
		}
		got := node.Deliveries()
		for ; handled < len(got); handled++ {
			d := got[handled]
			if !d.OK {
				t.Fatalf("the standardwebhooks library refused %s at %s: %s", d.ID, d.Path, d.Error)
			}
			if d.Type != "card.dispatched" {
				continue
			}
			if d.Path != "/tool" {
				t.Fatalf("card.dispatched went to %s", d.Path)
			}
			var ev outbox.JobPayload
			if err := json.Unmarshal([]byte(d.Body), &ev); err != nil {
				t.Fatal(err)
			}
			c, cb := ev.Data.Card, ev.Data.Callback
			if cb == nil || ev.Data.Run.ID != runID || c.Title == "" || len(c.AcceptanceCriteria) == 0 || cb.URL != b.url+outputPath(runID, c.ID) {
				t.Fatalf("dispatched: %s", d.Body)
			}
			cardIDs[c.Handle] = c.ID
			if prev := tokens[c.Handle]; len(prev) > 0 {
				if ev.Data.Feedback != "cite every source" {
					t.Errorf("%s came again without the reason: %q", c.Handle, ev.Data.Feedback)
				}
				if code, out := b.postOutput(t, prev[0], outputPath(runID, c.Handle), map[string]string{"output": "stale"}); code != http.StatusUnauthorized {
					t.Errorf("the replaced token of %s: %d %v", c.Handle, code, out)
				}
			}
			tokens[c.Handle] = append(tokens[c.Handle], cb.Token)
			if handled == 0 {
				// The card token opens nothing but its own output.
				for _, other := range []struct{ method, path string }{
					{"GET", "/api/v1/runs/" + runID},
					{"GET", "/api/v1/boards"},
					{"POST", "/api/v1/runs/" + runID + "/stop"},
					{"POST", "/api/v1/runs/" + runID + "/cards/" + c.Handle + "/review"},
				} {
					if code, out := b.api(t, cb.Token, other.method, other.path, map[string]string{"user": "alice", "decision": "accept"}); code != http.StatusUnauthorized {
						t.Errorf("the card token on %s %s: %d %v", other.method, other.path, code, out)
					}
				}
			}
			var inputs []string
			for _, in := range ev.Data.Inputs {
				inputs = append(inputs, in.Handle)
				if in.Output != "The tool's work on "+in.Handle+"." {
					t.Errorf("%s's input %s = %q", c.Handle, in.Handle, in.Output)
				}
			}
			code, out := b.postOutput(t, cb.Token, outputPath(runID, c.Handle), map[string]string{"output": "The tool's work on " + c.Handle + "."})
			if code != http.StatusOK {
				t.Fatalf("output of %s: %d %v", c.Handle, code, out)
			}
			if out["status"] == "Review" {
				decision := map[string]string{"user": "alice", "decision": "accept"}
				if !sentBack && len(inputs) > 0 {
					sentBack = true
					decision = map[string]string{"user": "alice", "decision": "send_back", "reason": "cite every source"}
				}
				if code, out := b.api(t, bootstrap, "POST", "/api/v1/runs/"+runID+"/cards/"+c.Handle+"/review", decision); code != http.StatusOK {
					t.Fatalf("review %s: %d %v", c.Handle, code, out)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}

	_, final := b.api(t, bootstrap, "GET", "/api/v1/runs/"+runID, nil)
	again := 0
	for _, c := range final["cards"].([]any) {
		c := c.(map[string]any)
		h := c["handle"].(string)
		if c["output"] != "The tool's work on "+h+"." || c["status"] != "Done" {
			t.Errorf("%s: %v", h, c)
		}
		if n := len(tokens[h]); n == 2 {
			again++
		} else if n != 1 {
			t.Errorf("%s was dispatched %d times", h, n)
		}
	}
	if !sentBack || again != 1 {
		t.Errorf("sent back: %v; dispatched again: %d cards", sentBack, again)
	}
	page, err := http.Get(b.url + "/boards/" + boardID + "/runs/1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(page.Body)
	_ = page.Body.Close()
	if page.StatusCode != http.StatusOK || !strings.Contains(html.UnescapeString(string(body)), "The tool's work on NEWS-2.") {
		t.Errorf("run page: %d, no output of NEWS-2", page.StatusCode)
	}

	// Ended, the run refuses its tokens; a token of it is refused on the
	// next run, and on another card.
	first := tokens["NEWS-1"][0]
	if code, out := b.postOutput(t, first, outputPath(runID, "NEWS-1"), map[string]string{"output": "late"}); code != http.StatusConflict || !strings.Contains(out["error"].(string), "the run has ended") {
		t.Errorf("after the run: %d %v", code, out)
	}
	if code, out := b.postOutput(t, first, outputPath(runID, "NEWS-2"), map[string]string{"output": "x"}); code != http.StatusForbidden {
		t.Errorf("on another card: %d %v", code, out)
	}
	status, next := b.api(t, bootstrap, "POST", "/api/v1/boards/"+boardID+"/runs", map[string]string{"user": "alice"})
	if status != http.StatusCreated {
		t.Fatalf("second run: %d %v", status, next)
	}
	if code, out := b.postOutput(t, first, outputPath(next["id"].(string), cardIDs["NEWS-1"]), map[string]string{"output": "x"}); code != http.StatusForbidden {
		t.Errorf("on another run: %d %v", code, out)
	}

	// The board's channel heard each output kept, beside the run's start
	// and end.
	outputs := 0
	until(t, "card.output events", func() bool {
		outputs = 0
		for _, d := range node.Deliveries() {
			if d.Type == "card.output" && d.Path == "/newsroom" {
				outputs++
			}
		}
		return outputs >= len(final["cards"].([]any))+1
	})

	// The tokens were made as the events were sent: the outbox holds
	// none, only placeholders.
	conn, err := pgx.Connect(context.Background(), b.vars["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var stored, placeholders int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FILTER (WHERE position('bnrc_' in convert_from(body, 'UTF8')) > 0),
    count(*) FILTER (WHERE position('bnrc-pending:tool:' in convert_from(body, 'UTF8')) > 0) FROM event_outbox`).Scan(&stored, &placeholders); err != nil {
		t.Fatal(err)
	}
	if stored != 0 || placeholders < len(final["cards"].([]any)) {
		t.Errorf("the outbox holds %d tokens and %d placeholders", stored, placeholders)
	}
}
