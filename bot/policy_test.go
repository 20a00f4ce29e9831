package bot_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
)

func setPolicy(t *testing.T, env *bottest.Env, key string, p board.Policy) {
	t.Helper()
	if err := env.Store.PutPolicy(context.Background(), key, p, "test"); err != nil {
		t.Fatal(err)
	}
}

// TestQuorumTwoReplicas sends 50 "second approvals" at once through two
// engines sharing Postgres and Redis: one board, and every approver is
// answered with it.
func TestQuorumTwoReplicas(t *testing.T) {
	t.Parallel()
	one := bottest.New(t)
	two := bottest.New(t, bottest.ReplicaOf(one))
	answerNewspaper(t, one)
	setPolicy(t, one, "console:general", board.Policy{Deciders: []string{"any_member"}, Approvals: 2})
	ctx := context.Background()
	p := propose(t, one, "alice")
	if !p.Quorum.Multi() || p.Quorum.Key != "console:general" {
		t.Fatalf("quorum = %+v", p.Quorum)
	}
	a, err := two.Engine.Approve(ctx, p.ID, "bob")
	if err != nil || a.State != board.ProposalPending || !slices.Equal(a.Approvals, []string{"bob"}) || a.Needed != 2 {
		t.Fatalf("first approval = %+v, %v", a, err)
	}
	var wg sync.WaitGroup
	results := make([]board.Approval, 50)
	errs := make([]error, 50)
	for i := range 50 {
		eng := one.Engine
		if i%2 == 1 {
			eng = two.Engine
		}
		wg.Go(func() { results[i], errs[i] = eng.Approve(ctx, p.ID, fmt.Sprintf("u%02d", i)) })
	}
	wg.Wait()
	// Each approver is answered with the one board: the approvals that
	// raced to complete the quorum with it, and one that arrived after it
	// was committed with "already approved" naming it.
	var boardID board.ID
	for i := range 50 {
		if errs[i] == nil {
			boardID = results[i].BoardID
		}
	}
	for i := range 50 {
		var de *bot.DecidedError
		switch {
		case errs[i] == nil && results[i].BoardID == boardID:
		case errors.As(errs[i], &de) && de.State == board.ProposalApproved && de.BoardID == boardID:
		default:
			t.Fatalf("approver %d: %+v, %v; want board %s", i, results[i], errs[i], boardID)
		}
	}
	if boardID == "" {
		t.Fatal("nobody was answered with the board")
	}
	if n := count(t, one, "boards"); n != 1 {
		t.Fatalf("%d boards, want 1", n)
	}
	// An approver who arrives after the board was committed is answered
	// with it, without recording an approval of a decided proposal.
	n := count(t, one, "proposal_approvals")
	if n < 2 || n > 51 {
		t.Fatalf("%d approvals recorded, want 2..51", n)
	}
	acts := actions(t, one, board.AuditFilter{ProposalID: p.ID})
	if c := strings.Count(strings.Join(acts, " "), "approval_recorded"); c != n {
		t.Fatalf("audited %d approvals, recorded %d: %v", c, n, acts)
	}
	if c := strings.Count(strings.Join(acts, " "), "executed"); c != 1 {
		t.Fatalf("executed %d times: %v", c, acts)
	}
	// The replica that took the first approval redrew the preview with it.
	two.Poster.WaitFor(t, "an update saying 1 of 2", func(_ []bottest.PostedReply, _, updates []board.Proposal) bool {
		for _, u := range updates {
			if u.State == board.ProposalPending && strings.Contains(bot.QuorumText(u, nil), "1 of 2 approvals: bob") {
				return true
			}
		}
		return false
	})
}

// TestRevisionResetsApprovals: the plan changed, so approvals of the old
// version do not count for the new one, which keeps its request's policy.
func TestRevisionResetsApprovals(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	answerNewspaper(t, env)
	setPolicy(t, env, "console:general", board.Policy{Deciders: []string{"requester", "bob", "carol"}, Approvals: 2, SelfApproval: true})
	ctx := context.Background()
	v1 := propose(t, env, "alice")
	if _, err := env.Engine.Approve(ctx, v1.ID, "bob"); err != nil {
		t.Fatal(err)
	}
	setPolicy(t, env, "console:general", board.Policy{Deciders: []string{"any_member"}, Approvals: 1})
	rid, err := env.Engine.Revise(ctx, v1.ID, "alice", "add an archive")
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, rid)
	v2, err := env.Engine.Proposal(ctx, st.ProposalID)
	if err != nil || v2.Version != 2 {
		t.Fatalf("v2 = %+v, %v", v2, err)
	}
	if v2.Quorum.Needed != 2 || len(v2.Quorum.Approvals) != 0 || v2.Quorum.Policy.Deciders[0] != "requester" {
		t.Fatalf("v2 quorum = %+v, want the request's 2-approval policy with no approvals", v2.Quorum)
	}
	a, err := env.Engine.Approve(ctx, v2.ID, "carol")
	if err != nil || a.State != board.ProposalPending || !slices.Equal(a.Approvals, []string{"carol"}) {
		t.Fatalf("first approval of v2 = %+v, %v", a, err)
	}
}

// powerLevels is a Matrix poster that knows power levels, as the Matrix
// adapter's will.
type powerLevels struct {
	bottest.Poster
	levels map[string]int
}

func (p *powerLevels) PowerLevel(_ context.Context, room, user string) (int, error) {
	if room != "!news:example.org" {
		return 0, errors.New("unknown room")
	}
	return p.levels[user], nil
}

func TestMatrixPowerLevels(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	answerNewspaper(t, env)
	roles := &powerLevels{levels: map[string]int{"@mod:example.org": 50, "@admin:example.org": 100, "@member:example.org": 0}}
	env.Engine.Register(board.SourceMatrix, bot.Registration{Poster: roles, PowerLevels: roles})
	ctx := context.Background()
	thread := board.Thread{Channel: board.Channel{Source: board.SourceMatrix, ID: "!news:example.org"}, ID: "$root"}
	propose := func() board.Proposal {
		t.Helper()
		id, err := env.Engine.Submit(ctx, board.Request{Thread: thread, User: "@req:example.org", Text: newspaperRequest})
		if err != nil {
			t.Fatal(err)
		}
		st := env.WaitRequest(t, id)
		p, err := env.Engine.Proposal(ctx, st.ProposalID)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// No policy stored: the built-in one lets the room's moderators decide.
	p := propose()
	if p.Quorum.Key != bot.BuiltinPolicyKey || !slices.Contains(p.Quorum.Policy.Deciders, "matrix_power:50") {
		t.Fatalf("matrix default = %+v", p.Quorum)
	}
	if _, err := env.Engine.Approve(ctx, p.ID, "@member:example.org"); !errors.Is(err, bot.ErrForbidden) {
		t.Fatalf("a member below the power level: %v, want ErrForbidden", err)
	}
	if a, err := env.Engine.Approve(ctx, p.ID, "@mod:example.org"); err != nil || a.BoardID == "" {
		t.Fatalf("a moderator: %+v, %v", a, err)
	}
	// matrix_power:100 in a 2-of policy: two admins needed.
	setPolicy(t, env, "matrix:*", board.Policy{Deciders: []string{"matrix_power:100", "@mod:example.org"}, Approvals: 2, SelfApproval: true})
	p = propose()
	if p.Quorum.Key != "matrix:*" {
		t.Fatalf("quorum = %+v", p.Quorum)
	}
	if _, err := env.Engine.Approve(ctx, p.ID, "@member:example.org"); !errors.Is(err, bot.ErrForbidden) {
		t.Fatalf("a member: %v", err)
	}
	if a, err := env.Engine.Approve(ctx, p.ID, "@admin:example.org"); err != nil || a.State != board.ProposalPending {
		t.Fatalf("admin: %+v, %v", a, err)
	}
	if a, err := env.Engine.Approve(ctx, p.ID, "@mod:example.org"); err != nil || a.BoardID == "" {
		t.Fatalf("named mod completes: %+v, %v", a, err)
	}
}

func TestWithdrawAndCancel(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	answerNewspaper(t, env)
	setPolicy(t, env, "console:general", board.Policy{Deciders: []string{"bob", "carol", "dave"}, Approvals: 3})
	ctx := context.Background()
	p := propose(t, env, "alice")
	if _, err := env.Engine.Withdraw(ctx, p.ID, "bob"); !errors.Is(err, bot.ErrNothingToWithdraw) {
		t.Fatalf("withdraw without approving: %v", err)
	}
	for _, u := range []string{"bob", "carol"} {
		if _, err := env.Engine.Approve(ctx, p.ID, u); err != nil {
			t.Fatal(err)
		}
	}
	w, err := env.Engine.Withdraw(ctx, p.ID, "bob")
	if err != nil || !slices.Equal(w.Quorum.Approvals, []string{"carol"}) {
		t.Fatalf("withdraw = %+v, %v", w.Quorum, err)
	}
	// The requester is not among the deciders of this policy.
	if _, err := env.Engine.Cancel(ctx, p.ID, "alice"); !errors.Is(err, bot.ErrForbidden) {
		t.Fatalf("cancel by the requester who may not decide: %v", err)
	}
	if _, err := env.Engine.Cancel(ctx, p.ID, "dave"); err != nil {
		t.Fatalf("cancel by a decider: %v", err)
	}
	if _, err := env.Engine.Approve(ctx, p.ID, "bob"); !errors.Is(err, bot.ErrAlreadyDecided) {
		t.Fatalf("approve after cancel: %v", err)
	}
	acts := strings.Join(actions(t, env, board.AuditFilter{ProposalID: p.ID}), " ")
	for _, want := range []string{"approval_recorded", "approval_withdrawn", "denied", "cancelled"} {
		if !strings.Contains(acts, want) {
			t.Errorf("audit lacks %s: %s", want, acts)
		}
	}
}

func TestDescribePolicy(t *testing.T) {
	t.Parallel()
	got := bot.DescribePolicy(board.PolicyInForce{Key: "matrix:!r:x", Policy: board.Policy{
		Deciders: []string{"matrix_power:50"}, Approvals: 2, AboveCards: &board.AboveCards{Cards: 20, Approvals: 3}, Budget: &board.Budget{TokensPerDay: 1000}}})
	want := "Approval policy matrix:!r:x: matrix_power:50 decide; 2 approval(s) needed, 3 for a plan of more than 20 cards; the requester's own approval does not count; model budget 1000 tokens a day (UTC)."
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	p := board.Proposal{Quorum: &board.Quorum{Key: "console:release", Policy: board.Policy{Deciders: []string{"alice", "bob"}}, Needed: 2, Approvals: []string{"alice"}}}
	if got := bot.QuorumText(p, nil); got != "1 of 2 approvals: alice · decided under policy console:release by alice, bob · the requester's own approval does not count" {
		t.Fatalf("QuorumText = %s", got)
	}
}

// TestWithdrawRacesCompletion: a withdrawal and the approval that would
// complete the quorum at the same moment never make a board on an
// approval that was withdrawn.
func TestWithdrawRacesCompletion(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	answerNewspaper(t, env)
	setPolicy(t, env, "console:general", board.Policy{Deciders: []string{"bob", "carol"}, Approvals: 2})
	ctx := context.Background()
	for range 10 {
		p := propose(t, env, "alice")
		if _, err := env.Engine.Approve(ctx, p.ID, "bob"); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var a board.Approval
		var aerr, werr error
		wg.Go(func() { a, aerr = env.Engine.Approve(ctx, p.ID, "carol") })
		wg.Go(func() { _, werr = env.Engine.Withdraw(ctx, p.ID, "bob") })
		wg.Wait()
		if aerr != nil {
			t.Fatalf("carol: %v", aerr)
		}
		var boards int
		if err := env.Store.Pool().QueryRow(ctx, `SELECT count(*) FROM boards WHERE proposal_id = $1`, string(p.ID)).Scan(&boards); err != nil {
			t.Fatal(err)
		}
		switch {
		case werr == nil && (boards != 0 || a.State != board.ProposalPending):
			t.Fatalf("bob withdrew, yet %d boards and carol got %+v", boards, a)
		case werr != nil && (boards != 1 || a.BoardID == ""):
			t.Fatalf("bob's withdrawal failed (%v), yet %d boards and carol got %+v", werr, boards, a)
		case werr != nil && !errors.Is(werr, bot.ErrAlreadyDecided):
			t.Fatalf("withdrawal refused with %v, want a decided error", werr)
		}
	}
}
