package bot_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/planner/plannertest"
)

// A model slower than the reclaim time is called once: the worker renews
// its lease while it waits, so the other replica never takes the request.
func TestSlowModelIsPlannedOnce(t *testing.T) {
	t.Parallel()
	first := bottest.New(t)
	second := bottest.New(t, bottest.ReplicaOf(first))
	plan := plannertest.NewspaperPlan(t)
	// 3.5 s against a reclaim time of 1 s: three reclaims' worth.
	first.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply {
		return plannertest.Reply{Content: plan, Delay: 3500 * time.Millisecond}
	})
	id, err := first.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	if st := first.WaitRequest(t, id); st.State != board.RequestDone || st.ProposalID == "" {
		t.Fatalf("status = %+v", st)
	}
	first.WaitIdle(t)
	_, p1, _ := first.Poster.Snapshot()
	_, p2, _ := second.Poster.Snapshot()
	if n := len(first.Model.Requests()); n != 1 {
		t.Errorf("model calls = %d, want 1", n)
	}
	if len(p1)+len(p2) != 1 {
		t.Errorf("previews = %d + %d, want 1", len(p1), len(p2))
	}
	if n := count(t, first, "proposals"); n != 1 {
		t.Errorf("proposals = %d, want 1", n)
	}
	if got := actions(t, first, board.AuditFilter{Channel: "console:general"}); strings.Join(got, ",") != "requested,proposed" {
		t.Errorf("audit = %v", got)
	}
}

// stallingPoster stalls every preview until its context ends, as a
// platform API that hangs does.
type stallingPoster struct {
	bottest.Poster
	stalled chan struct{}
	once    sync.Once
}

func (s *stallingPoster) PostPreview(ctx context.Context, _ board.Proposal) (board.MessageRef, error) {
	s.once.Do(func() { close(s.stalled) })
	<-ctx.Done()
	return "", ctx.Err()
}

// Killed while posting a preview, a request is answered after the
// restart, from the answer it had planned: the model is not asked again and
// one preview is posted.
func TestKilledWhilePostingIsAnsweredAfterRestart(t *testing.T) {
	t.Parallel()
	first := bottest.New(t, bottest.WithConfig(func(c *bot.Config) { c.PostTimeout = time.Second }))
	answerNewspaper(t, first)
	stall := &stallingPoster{stalled: make(chan struct{})}
	first.Engine.Register(board.SourceConsole, bot.Registration{Poster: stall})
	id, err := first.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-stall.stalled:
	case <-time.After(20 * time.Second):
		t.Fatal("the preview was never posted")
	}
	first.Stop() // dies while the platform hangs
	if st, _ := first.Engine.Request(context.Background(), id); st.State == board.RequestDone || st.State == board.RequestFailed {
		t.Fatalf("a request whose preview was never posted reads %s", st.State)
	}

	second := bottest.New(t, bottest.ReplicaOf(first))
	st := second.WaitRequest(t, id)
	if st.State != board.RequestDone || st.ProposalID == "" {
		t.Fatalf("status after restart = %+v", st)
	}
	second.WaitIdle(t)
	_, previews, _ := second.Poster.Snapshot()
	if len(previews) != 1 || previews[0].ID != st.ProposalID {
		t.Fatalf("previews after restart = %+v", previews)
	}
	if n := len(first.Model.Requests()); n != 1 {
		t.Errorf("model calls = %d, want 1", n)
	}
	if n := count(t, second, "proposals"); n != 1 {
		t.Errorf("proposals = %d, want 1", n)
	}
}

// Revising v1 while the model is slow and approving v1 at once leaves one
// board: the revision is dropped and says so, and no v2 waits for a
// decision.
func TestApproveDuringRevisionDropsTheRevision(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	plan := plannertest.NewspaperPlan(t)
	env.Model.Handle(func(req openai.ChatCompletionRequest) plannertest.Reply {
		if strings.Contains(plannertest.LastUserMessage(req), "weekly") {
			return plannertest.Reply{Content: plan, Delay: 1500 * time.Millisecond}
		}
		return plannertest.Reply{Content: plan}
	})
	ctx := context.Background()
	v1 := propose(t, env, "alice")
	rid, err := env.Engine.Revise(ctx, v1.ID, "alice", "make it weekly")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Engine.Approve(ctx, v1.ID, "alice"); err != nil {
		t.Fatalf("approve v1 during the revision: %v", err)
	}
	// The revision is refused when its worker takes it, or dropped when
	// the model's answer arrives, depending on which comes after the
	// approval; either way it says why, and makes no version.
	st := env.WaitRequest(t, rid)
	if st.ProposalID != "" || st.Reply == nil || !dropped(st.Reply.Text, "approved") {
		t.Fatalf("revision answer = %+v, %+v", st, st.Reply)
	}
	if n := count(t, env, "boards"); n != 1 {
		t.Fatalf("boards = %d, want 1", n)
	}
	if n := count(t, env, "proposals"); n != 1 {
		t.Fatalf("proposals = %d, want v1 only", n)
	}
	env.Poster.WaitFor(t, "the dropped revision said in the thread", func(replies []bottest.PostedReply, _, _ []board.Proposal) bool {
		for _, r := range replies {
			if dropped(r.Reply.Text, "approved") {
				return true
			}
		}
		return false
	})
}

// dropped reports whether text says a revision was not made because its
// proposal was already state: dropped after planning, or refused before.
func dropped(text string, state string) bool {
	return (strings.Contains(text, "dropped this revision") || strings.Contains(text, "can't revise")) && strings.Contains(text, state)
}

// Two revisions at once make one v2; approving it and then trying the
// other versions of the request makes one board.
func TestConcurrentRevisesMakeOneVersion(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	answerNewspaper(t, env)
	ctx := context.Background()
	v1 := propose(t, env, "alice")
	var ids [2]board.RequestID
	var wg sync.WaitGroup
	for i, fb := range []string{"make it weekly", "add an archive"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id, err := env.Engine.Revise(ctx, v1.ID, "alice", fb)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		}()
	}
	wg.Wait()
	var v2s []board.ProposalID
	refused := 0
	for _, id := range ids {
		st := env.WaitRequest(t, id)
		switch {
		case st.ProposalID != "":
			v2s = append(v2s, st.ProposalID)
		case st.Reply != nil && (strings.Contains(st.Reply.Text, "dropped this revision") || strings.Contains(st.Reply.Text, "can't revise")):
			refused++
		default:
			t.Fatalf("revision answer = %+v", st)
		}
	}
	if len(v2s) != 1 || refused != 1 {
		t.Fatalf("v2s = %v, refused = %d; want one of each", v2s, refused)
	}
	if _, err := env.Engine.Approve(ctx, v2s[0], "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Engine.Approve(ctx, v1.ID, "alice"); !errors.Is(err, bot.ErrAlreadyDecided) {
		t.Fatalf("approve v1 after v2: %v", err)
	}
	if n := count(t, env, "boards"); n != 1 {
		t.Fatalf("boards = %d, want 1", n)
	}
}

// A decision claim left by a crashed approver frees itself within seconds;
// and one whose holder committed before crashing answers what was
// committed at once, not "being decided".
func TestCrashedApproverClaimIsReleasedPromptly(t *testing.T) {
	t.Parallel()
	// Alice's approval in a process that crashed took the claim (with the
	// engine's own TTL) and wrote nothing.
	env, p, ps := heldProposal(t, "approve:alice")
	ctx := context.Background()
	start := time.Now()
	var de *bot.DecidedError
	if _, err := env.Engine.Approve(ctx, p.ID, "alice"); !errors.As(err, &de) || de.State != "being decided" {
		t.Fatalf("approve under a live claim: %v", err)
	}
	var a board.Approval
	for {
		var err error
		if a, err = env.Engine.Approve(ctx, p.ID, "alice"); err == nil {
			break
		}
		if time.Since(start) > bot.DefaultClaimTTL+3*time.Second {
			t.Fatalf("still refused after %s: %v", time.Since(start), err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if count(t, env, "boards") != 1 || a.BoardID == "" {
		t.Fatal("no board after the claim freed")
	}

	// Crashed after committing, before Redis heard: the answer is what
	// Postgres says.
	q := propose(t, env, "bob")
	res, err := env.Store.Execute(ctx, board.Execution{ProposalID: q.ID, Channel: q.Thread.Channel.Key(), ApprovedBy: "bob", Plan: q.Plan})
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := ps.Claim(ctx, q.ID, "approve:bob", bot.DefaultClaimTTL); !ok {
		t.Fatal("crashed claim not taken")
	}
	if _, err := env.Engine.Approve(ctx, q.ID, "bob"); !errors.As(err, &de) || de.State != board.ProposalApproved || de.BoardID != res.BoardID {
		t.Fatalf("approve after a committed crash: %v", err)
	}
}

// Someone who may not decide, clicking Approve at the same moment as the
// requester, does not turn the requester away with "being decided": their
// claim is given back at once and the requester's approval goes ahead. And
// they hear that they may not decide, whoever holds the claim.
func TestRefusedClickDoesNotTurnTheRequesterAway(t *testing.T) {
	t.Parallel()
	// Alice's own claim is held: mallory is refused for who she is.
	env, p, ps := heldProposal(t, "approve:alice")
	ctx := context.Background()
	if _, err := env.Engine.Approve(ctx, p.ID, "mallory"); !errors.Is(err, bot.ErrForbidden) {
		t.Fatalf("mallory under alice's claim: %v; want forbidden", err)
	}
	if err := ps.Release(ctx, p.ID, "approve:alice"); err != nil {
		t.Fatal(err)
	}

	// Mallory's refused click holds the claim for a moment.
	if ok, err := ps.Claim(ctx, p.ID, "approve:mallory", bot.DefaultClaimTTL); err != nil || !ok {
		t.Fatalf("claim = %v, %v", ok, err)
	}
	go func() {
		time.Sleep(30 * time.Millisecond)
		_ = ps.Release(ctx, p.ID, "approve:mallory")
	}()
	a, err := env.Engine.Approve(ctx, p.ID, "alice")
	if err != nil {
		t.Fatalf("alice's approval next to a refused click: %v", err)
	}
	if a.BoardID == "" || count(t, env, "boards") != 1 {
		t.Fatalf("approval %+v, boards = %d; want one board", a, count(t, env, "boards"))
	}
}

// heldProposal is alice's newspaper proposal with its decision claim
// taken by holder ("approve:alice"), as a decision in another process
// takes it.
func heldProposal(t *testing.T, holder string) (*bottest.Env, board.Proposal, *redisstore.InFlight) {
	t.Helper()
	env := bottest.New(t)
	answerNewspaper(t, env)
	p := propose(t, env, "alice")
	ps := redisstore.NewInFlight(env.Redis, env.Prefix)
	if ok, err := ps.Claim(context.Background(), p.ID, holder, bot.DefaultClaimTTL); err != nil || !ok {
		t.Fatalf("claim by %s = %v, %v", holder, ok, err)
	}
	return env, p, ps
}

// A NUL in model output is a bad plan, named with its path; it never
// reaches Postgres to come back as "a database is unavailable".
func TestNULInModelOutputIsABadPlan(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	plan := strings.Replace(plannertest.NewspaperPlan(t), `"title": "`, `"title": "\u0000`, 1)
	env.Model.Handle(func(openai.ChatCompletionRequest) plannertest.Reply { return plannertest.Reply{Content: plan} })
	id, err := env.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest})
	if err != nil {
		t.Fatal(err)
	}
	st := env.WaitRequest(t, id)
	if st.State != board.RequestFailed || st.Reply == nil || !strings.Contains(st.Reply.Text, "control character") || strings.Contains(st.Reply.Text, "database") {
		t.Fatalf("status = %+v", st)
	}
	if n := count(t, env, "proposals"); n != 0 {
		t.Fatalf("proposals = %d", n)
	}
}
