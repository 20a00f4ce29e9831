package systemtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bobnet/bobnet/board"
)

const testPolicyFile = `
default: {deciders: [requester, admins], approvals: 1, self_approval: true}
channels:
  "console:release":
    deciders: [alice, bob, carol]
    approvals: 2
    self_approval: false
  "console:crowd":
    deciders: [any_member]
    approvals: 2
    self_approval: false
  "console:big":
    deciders: [requester, bob, carol]
    approvals: 1
    above_cards: {cards: 5, approvals: 2}
`

// startPolicyApp starts the app with testPolicyFile as BOBNET_POLICY_FILE.
func startPolicyApp(t *testing.T) *testApp {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policies.yaml")
	if err := os.WriteFile(path, []byte(testPolicyFile), 0o600); err != nil {
		t.Fatal(err)
	}
	return start(t, withEnv(map[string]string{"BOBNET_POLICY_FILE": path}))
}

// propose asks for the newspaper plan in channel as user and returns the
// proposal's id.
func (a *testApp) propose(t *testing.T, channel, user string) string {
	t.Helper()
	var accepted struct {
		RequestID string `json:"request_id"`
	}
	if code := a.call(t, "POST", "/api/v1/channels/"+channel+"/messages", map[string]string{"user": user, "text": "plan our daily research newspaper"}, &accepted); code != http.StatusAccepted {
		t.Fatalf("post message: %d", code)
	}
	r := a.waitRequest(t, accepted.RequestID)
	if r.ProposalID == "" {
		t.Fatalf("no proposal: %+v", r)
	}
	return r.ProposalID
}

type approveAnswer struct {
	State     string   `json:"state"`
	Approvals []string `json:"approvals"`
	Needed    int      `json:"needed"`
	BoardID   string   `json:"board_id"`
	BoardURL  string   `json:"board_url"`
	Error     string   `json:"error"`
	Rule      string   `json:"rule"`
}

func (a *testApp) approve(t *testing.T, id, user string) (int, approveAnswer) {
	t.Helper()
	var out approveAnswer
	code := a.call(t, "POST", "/api/v1/proposals/"+id+"/approve", map[string]string{"user": user}, &out)
	return code, out
}

type proposalAnswer struct {
	State   string `json:"state"`
	BoardID string `json:"board_id"`
	Quorum  *struct {
		Key       string       `json:"key"`
		Policy    board.Policy `json:"policy"`
		Needed    int          `json:"needed"`
		Approvals []string     `json:"approvals"`
	} `json:"quorum"`
}

func (a *testApp) proposal(t *testing.T, id string) proposalAnswer {
	t.Helper()
	var p proposalAnswer
	if code := a.call(t, "GET", "/api/v1/proposals/"+id, nil, &p); code != http.StatusOK || p.Quorum == nil {
		t.Fatalf("GET proposal %s: %d %+v", id, code, p)
	}
	return p
}

// boards counts the boards made from proposal id, straight from Postgres.
func (a *testApp) boards(t *testing.T, id string) int {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), a.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM boards WHERE proposal_id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestQuorumTwoOfThreeREST(t *testing.T) {
	t.Parallel()
	a := startPolicyApp(t)
	events := a.events(t, "release")
	id := a.propose(t, "release", "alice")
	p := a.proposal(t, id)
	if p.Quorum.Key != "console:release" || p.Quorum.Needed != 2 || len(p.Quorum.Approvals) != 0 {
		t.Fatalf("quorum %+v", p.Quorum)
	}

	code, ans := a.approve(t, id, "alice")
	if code != http.StatusForbidden || !strings.Contains(ans.Error, "self_approval") {
		t.Fatalf("the requester's own approval: %d %+v, want 403 naming self_approval", code, ans)
	}
	code, ans = a.approve(t, id, "mallory")
	if code != http.StatusForbidden || !strings.Contains(ans.Error, "alice, bob, carol") {
		t.Fatalf("a non-decider: %d %+v, want 403 naming the deciders", code, ans)
	}

	code, ans = a.approve(t, id, "bob")
	if code != http.StatusOK || ans.State != "pending" || !slices.Equal(ans.Approvals, []string{"bob"}) || ans.Needed != 2 || ans.BoardID != "" {
		t.Fatalf("first approval: %d %+v, want 200 pending [bob] of 2", code, ans)
	}
	if n := a.boards(t, id); n != 0 {
		t.Fatalf("%d boards after one of two approvals", n)
	}
	if p := a.proposal(t, id); p.State != "pending" || !slices.Equal(p.Quorum.Approvals, []string{"bob"}) {
		t.Fatalf("after bob: %+v", p)
	}
	// The proposal page says so too.
	page, err := http.Get(a.URL + "/proposals/" + id)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !strings.Contains(string(html), "1 of 2 approvals: bob · decided under policy console:release") {
		t.Fatalf("the proposal page does not show the approvals: %s", html)
	}
	// The console's preview is told: proposal_updated with 1 of 2.
	timeout := time.After(20 * time.Second)
	for told := false; !told; {
		select {
		case ev := <-events:
			var upd proposalAnswer
			told = ev.Type == "proposal_updated" && json.Unmarshal(ev.Data, &upd) == nil && upd.Quorum != nil &&
				upd.State == "pending" && slices.Equal(upd.Quorum.Approvals, []string{"bob"}) && upd.Quorum.Needed == 2
		case <-timeout:
			t.Fatal("no proposal_updated event with 1 of 2 approvals")
		}
	}
	// Approving twice is one approval.
	if code, ans = a.approve(t, id, "bob"); code != http.StatusOK || !slices.Equal(ans.Approvals, []string{"bob"}) {
		t.Fatalf("bob again: %d %+v", code, ans)
	}

	code, ans = a.approve(t, id, "carol")
	if code != http.StatusOK || ans.BoardID == "" || ans.BoardURL == "" {
		t.Fatalf("second approval: %d %+v, want the board", code, ans)
	}
	if n := a.boards(t, id); n != 1 {
		t.Fatalf("%d boards, want 1", n)
	}
	if code, ans = a.approve(t, id, "bob"); code != http.StatusConflict {
		t.Fatalf("approval after the board: %d %+v, want 409", code, ans)
	}
}

func TestQuorumFiftyConcurrentSecondApprovals(t *testing.T) {
	t.Parallel()
	a := startPolicyApp(t)
	id := a.propose(t, "crowd", "alice")
	if code, ans := a.approve(t, id, "bob"); code != http.StatusOK || ans.State != "pending" {
		t.Fatalf("first approval: %d %+v", code, ans)
	}
	var wg sync.WaitGroup
	answers := make([]approveAnswer, 50)
	codes := make([]int, 50)
	for i := range 50 {
		wg.Go(func() {
			codes[i], answers[i] = a.approve(t, id, fmt.Sprintf("user%02d", i))
		})
	}
	wg.Wait()
	// Every approver is told of the one board: 200 for those that raced to
	// complete the quorum, 409 "already approved" naming it for one that
	// arrived after it was committed.
	board := ""
	for i := range 50 {
		ok := (codes[i] == http.StatusOK || (codes[i] == http.StatusConflict && answers[i].State == "approved")) && answers[i].BoardID != ""
		if !ok {
			t.Fatalf("approver %d: %d %+v, want 200 or 409 with the board", i, codes[i], answers[i])
		}
		if board == "" {
			board = answers[i].BoardID
		}
		if answers[i].BoardID != board {
			t.Fatalf("approver %d got board %s, another got %s", i, answers[i].BoardID, board)
		}
	}
	if n := a.boards(t, id); n != 1 {
		t.Fatalf("%d boards, want exactly 1", n)
	}
}

func TestQuorumAboveCards(t *testing.T) {
	t.Parallel()
	a := startPolicyApp(t)
	// The newspaper plan has 10 cards: over the 5-card threshold.
	id := a.propose(t, "big", "alice")
	if p := a.proposal(t, id); p.Quorum.Needed != 2 {
		t.Fatalf("a 10-card plan needs %d approvals, want 2", p.Quorum.Needed)
	}
	if code, ans := a.approve(t, id, "alice"); code != http.StatusOK || ans.State != "pending" || ans.Needed != 2 {
		t.Fatalf("one approval of a big plan: %d %+v, want pending of 2", code, ans)
	}
	if n := a.boards(t, id); n != 0 {
		t.Fatalf("%d boards after one approval of a big plan", n)
	}
	if code, ans := a.approve(t, id, "bob"); code != http.StatusOK || ans.BoardID == "" {
		t.Fatalf("second approval: %d %+v", code, ans)
	}
}

func TestQuorumWithdraw(t *testing.T) {
	t.Parallel()
	a := startPolicyApp(t)
	id := a.propose(t, "release", "alice")
	a.approve(t, id, "bob")
	var p proposalAnswer
	if code := a.call(t, "POST", "/api/v1/proposals/"+id+"/withdraw", map[string]string{"user": "bob"}, &p); code != http.StatusOK || len(p.Quorum.Approvals) != 0 {
		t.Fatalf("withdraw: %d %+v", code, p)
	}
	if code := a.call(t, "POST", "/api/v1/proposals/"+id+"/withdraw", map[string]string{"user": "bob"}, nil); code != http.StatusConflict {
		t.Fatalf("withdraw twice: %d, want 409", code)
	}
	// bob's withdrawn approval no longer counts: carol's is the first.
	if code, ans := a.approve(t, id, "carol"); code != http.StatusOK || ans.State != "pending" || !slices.Equal(ans.Approvals, []string{"carol"}) {
		t.Fatalf("after the withdrawal: %d %+v", code, ans)
	}
	// Cancel by a decider who is not the requester.
	if code := a.call(t, "POST", "/api/v1/proposals/"+id+"/cancel", map[string]string{"user": "bob"}, nil); code != http.StatusOK {
		t.Fatalf("cancel by a decider: %d", code)
	}
	if code, _ := a.approve(t, id, "bob"); code != http.StatusConflict {
		t.Fatalf("approval after cancel: %d, want 409", code)
	}
}

func TestPolicyChangeKeepsProposalsPolicy(t *testing.T) {
	t.Parallel()
	a := startPolicyApp(t)
	decided := a.propose(t, "release", "alice")
	a.approve(t, decided, "bob")
	if code, ans := a.approve(t, decided, "carol"); code != http.StatusOK || ans.BoardID == "" {
		t.Fatalf("approve: %d %+v", code, ans)
	}
	pending := a.propose(t, "release", "alice")

	var view struct {
		Key    string       `json:"key"`
		Policy board.Policy `json:"policy"`
	}
	loose := board.Policy{Deciders: []string{"any_member"}, Approvals: 1, SelfApproval: true}
	if code := a.call(t, "PUT", "/api/v1/policies/console:release", loose, &view); code != http.StatusOK || view.Policy.Approvals != 1 {
		t.Fatalf("PUT policy: %d %+v", code, view)
	}
	if code := a.call(t, "GET", "/api/v1/policies/console:release", nil, &view); code != http.StatusOK || view.Key != "console:release" || view.Policy.Deciders[0] != "any_member" {
		t.Fatalf("GET policy: %d %+v", code, view)
	}
	if code := a.call(t, "PUT", "/api/v1/policies/console:release", `{"deciders":["x"],"approvals":1,"quorum":3}`, nil); code != http.StatusBadRequest {
		t.Fatalf("unknown field: %d, want 400", code)
	}

	// The decided proposal still shows the policy it was decided under.
	if p := a.proposal(t, decided); p.State != "approved" || p.Quorum.Needed != 2 || !slices.Equal(p.Quorum.Approvals, []string{"bob", "carol"}) {
		t.Fatalf("decided proposal after the change: %+v", p)
	}
	// The pending one keeps its 2-of-3 without self-approval.
	p := a.proposal(t, pending)
	if p.Quorum.Needed != 2 || p.Quorum.Policy.SelfApproval || p.Quorum.Policy.Deciders[0] != "alice" {
		t.Fatalf("pending proposal after the change: %+v", p.Quorum)
	}
	if code, _ := a.approve(t, pending, "alice"); code != http.StatusForbidden {
		t.Fatalf("the requester under the old policy: %d, want 403", code)
	}
	if code, ans := a.approve(t, pending, "mallory"); code != http.StatusForbidden {
		t.Fatalf("a non-decider under the old policy: %d %+v, want 403", code, ans)
	}
	if code, ans := a.approve(t, pending, "bob"); code != http.StatusOK || ans.State != "pending" {
		t.Fatalf("one approval under the old policy: %d %+v, want pending", code, ans)
	}
	// A new proposal takes the new policy.
	fresh := a.propose(t, "release", "alice")
	if code, ans := a.approve(t, fresh, "alice"); code != http.StatusOK || ans.BoardID == "" {
		t.Fatalf("under the new policy: %d %+v", code, ans)
	}
	var all struct {
		Default  struct{ Key string } `json:"default"`
		Channels map[string]board.Policy
	}
	if code := a.call(t, "GET", "/api/v1/policies", nil, &all); code != http.StatusOK || all.Default.Key != "default" || len(all.Channels) != 3 {
		t.Fatalf("GET policies: %d %+v", code, all)
	}
}

func TestModelTokensMetric(t *testing.T) {
	t.Parallel()
	a := startPolicyApp(t)
	a.propose(t, "release", "alice")
	got := a.scrape(t)
	if got[`bobnet_model_tokens_total{source="console"}`] <= 0 {
		t.Fatalf("no console tokens in /metrics: %v", got)
	}
}

// TestPolicyKeysArePercentDecoded: a policy's URL names its key
// percent-encoded where it must be: a Slack channel of multi-workspace
// mode (slack:T0123/C0123) has a slash, and a Matrix room's key may come
// escaped or not. Both spellings name the same policy.
func TestPolicyKeysArePercentDecoded(t *testing.T) {
	t.Parallel()
	a := startPolicyApp(t)
	var view struct {
		Channel string       `json:"channel"`
		Key     string       `json:"key"`
		Policy  board.Policy `json:"policy"`
	}
	p := board.Policy{Deciders: []string{"admins"}, Approvals: 1}
	for _, tc := range []struct{ put, get, key string }{
		{"slack:T0123%2FC0456", "slack:T0123%2fC0456", "slack:T0123/C0456"},
		{"matrix:!news:example.org", "matrix:%21news%3Aexample.org", "matrix:!news:example.org"},
	} {
		if code := a.call(t, "PUT", "/api/v1/policies/"+tc.put, p, &view); code != http.StatusOK || view.Key != tc.key {
			t.Fatalf("PUT %s: %d %+v", tc.put, code, view)
		}
		if code := a.call(t, "GET", "/api/v1/policies/"+tc.get, nil, &view); code != http.StatusOK || view.Key != tc.key || view.Channel != tc.key {
			t.Fatalf("GET %s: %d %+v", tc.get, code, view)
		}
	}
	var list struct {
		Channels map[string]any `json:"channels"`
	}
	if code := a.call(t, "GET", "/api/v1/policies", nil, &list); code != http.StatusOK || list.Channels["slack:T0123/C0456"] == nil || list.Channels["matrix:!news:example.org"] == nil {
		t.Fatalf("policies: %d %v", code, list.Channels)
	}
}
