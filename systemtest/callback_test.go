package systemtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/adapters/webhook/outbox/outboxtest"
	"github.com/bobnet/bobnet/signing"
)

// callbacksFile sends both hooks' callbacks to url without a secret of
// their own: they are signed with BOBNET_CALLBACK_SECRET.
func callbacksFile(url string) string {
	return fmt.Sprintf(`
hooks:
  github:
    target: console:triage
    deciders: [alice]
    filter: {events: [issues], actions: [labeled], labels: [plan-me]}
    callbacks: [{url: %q}]
  forms:
    deciders: [alice]
    callbacks: [{url: %q}]
outbound:
  allow_hosts: [127.0.0.1]
  allow_private: [127.0.0.1/32]
  retry_base: 50ms
  retry_max: 1s
`, url+"/github", url+"/forms")
}

// TestCallbacksVerifyWithTheOfficialLibrary: every callback of a hook
// whose inbound secret is not whsec_ (GitHub's) reaches a receiver that
// checks it with the standardwebhooks npm package, as its README says,
// with BOBNET_CALLBACK_SECRET: proposal.created, proposal.approved,
// board.created and card.changed all verify. Before callbacks had a
// secret of their own they were signed with the raw bytes of the GitHub
// hook's secret, which that library cannot read.
func TestCallbacksVerifyWithTheOfficialLibrary(t *testing.T) {
	t.Parallel()
	node := outboxtest.StartNode(t, callbackSecret)
	b := newBobNet(t, callbacksFile(node.URL))
	b.vars["BOBNET_CALLBACK_SECRET"] = callbackSecret
	b.boot(t)

	body, _ := os.ReadFile(filepath.Join("..", "testdata", "webhook", "github-issues-labeled.json"))
	h := http.Header{}
	h.Set("X-GitHub-Event", "issues")
	h.Set("X-GitHub-Delivery", "node-1")
	h.Set("X-Hub-Signature-256", signing.SHA256Signature(ghHookSecret, body))
	p := b.proposalOf(t, b.hook(t, "github", h, body))
	status, out := b.api(t, bootstrap, "POST", fmt.Sprintf("/api/v1/proposals/%s/approve", p["id"]), map[string]string{"user": "alice"})
	if status != http.StatusOK {
		t.Fatalf("approve: %d %v", status, out)
	}
	status, brd := b.api(t, bootstrap, "GET", fmt.Sprintf("/api/v1/boards/%s", out["board_id"]), nil)
	if status != http.StatusOK {
		t.Fatalf("board: %d %v", status, brd)
	}
	var first string
	for _, c := range brd["cards"].([]any) {
		c := c.(map[string]any)
		if deps, _ := c["depends_on"].([]any); len(deps) == 0 {
			first = c["handle"].(string)
			break
		}
	}
	if status, moved := b.api(t, bootstrap, "PATCH", "/api/v1/cards/"+first, map[string]any{"user": "alice", "status": "In Progress"}); status != http.StatusOK {
		t.Fatalf("PATCH %s: %d %v", first, status, moved)
	}

	got, err := node.WaitFor(4, 30*time.Second)
	if err != nil {
		t.Fatalf("%v: %+v", err, got)
	}
	var types []string
	for _, d := range got {
		if !d.OK {
			t.Errorf("the standardwebhooks library refused %s at %s: %s", d.ID, d.Path, d.Error)
		}
		types = append(types, d.Type)
		if d.Path != "/github" {
			t.Errorf("%s went to %s", d.ID, d.Path)
		}
	}
	if want := "proposal.created proposal.approved board.created card.changed"; strings.Join(types, " ") != want {
		t.Fatalf("events = %v, want %s", types, want)
	}
	// card.changed says nothing of a proposal: no empty proposal fields.
	var changed struct{ Data map[string]any }
	if err := json.Unmarshal([]byte(got[3].Body), &changed); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"proposal_id", "state", "version", "requested_by", "cards", "links"} {
		if v, ok := changed.Data[k]; ok {
			t.Errorf("card.changed carries %s = %v", k, v)
		}
	}
}

// TestCallbackSecretIsRequiredAndOwn: callbacks without BOBNET_CALLBACK_SECRET,
// with a secret the library cannot read, or with a hook's inbound secret
// stop BobNet at start, naming the variable.
func TestCallbackSecretIsRequiredAndOwn(t *testing.T) {
	t.Parallel()
	file := callbacksFile("http://127.0.0.1:9")
	for name, tc := range map[string]struct {
		secret, file, want string
	}{
		"absent":                {"", file, "BOBNET_CALLBACK_SECRET: required"},
		"not whsec_":            {"hunter2-hunter2-hunter2-hunter2", file, "BOBNET_CALLBACK_SECRET"},
		"short":                 {"whsec_c2hvcnQ=", file, "BOBNET_CALLBACK_SECRET"},
		"a hook's secret":       {formsSecret, file, "BOBNET_CALLBACK_SECRET: it is also a hook's secret"},
		"file secret not whsec": {callbackSecret, strings.Replace(file, "{url: \"http://127.0.0.1:9/forms\"}", "{url: \"http://127.0.0.1:9/forms\", secret: \"plain-secret\"}", 1), "does not start with whsec_"},
		"file secret short":     {callbackSecret, strings.Replace(file, "{url: \"http://127.0.0.1:9/forms\"}", "{url: \"http://127.0.0.1:9/forms\", secret: \"whsec_c2hvcnQ=\"}", 1), "whsec_"},
		"file secret inbound":   {callbackSecret, strings.Replace(file, "{url: \"http://127.0.0.1:9/forms\"}", "{url: \"http://127.0.0.1:9/forms\", secret: \""+formsSecret+"\"}", 1), "hook's inbound secret"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := newBobNet(t, tc.file)
			b.vars["BOBNET_CALLBACK_SECRET"] = tc.secret
			var err error
			start(t, withEnv(b.vars), startFails(&err))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("start = %v, want %q", err, tc.want)
			}
		})
	}
	// Without callbacks the variable is not needed.
	b := newBobNet(t, "")
	var err error
	start(t, withEnv(b.vars), startFails(&err))
	if err != nil {
		t.Fatalf("no callbacks, no BOBNET_CALLBACK_SECRET: %v", err)
	}
}
