package bot_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
)

// gatedPoster holds every preview until the test opens the gate, and says
// which replica is posting, as a slow platform API does.
type gatedPoster struct {
	bottest.Poster
	name    string
	posting chan<- posting
	gate    <-chan struct{}
}

type posting struct {
	replica  string
	proposal board.ProposalID
}

func (g *gatedPoster) PostPreview(ctx context.Context, p board.Proposal) (board.MessageRef, error) {
	g.posting <- posting{g.name, p.ID}
	<-g.gate
	return g.Poster.PostPreview(ctx, p)
}

// A decision taken on one replica while another is still posting the
// preview finds no message to redraw; the replica posting it redraws it
// once the post returns, so the preview never keeps offering buttons for a
// decided plan. (Slack and Matrix once left such previews as they were.)
func TestDecisionWhilePreviewIsPostedRedrawsIt(t *testing.T) {
	t.Parallel()
	for _, quorum := range []int{1, 2} {
		t.Run(map[int]string{1: "approve", 2: "first of two approvals"}[quorum], func(t *testing.T) {
			t.Parallel()
			one := bottest.New(t)
			two := bottest.New(t, bottest.ReplicaOf(one))
			answerNewspaper(t, one)
			if quorum > 1 {
				setPolicy(t, one, "console:general", board.Policy{Deciders: []string{"any_member"}, Approvals: quorum})
			}
			started := make(chan posting, 2)
			gate := make(chan struct{})
			var opened sync.Once
			open := func() { opened.Do(func() { close(gate) }) }
			t.Cleanup(open) // before the engines stop, which waits for the post
			posters := map[string]*gatedPoster{
				"one": {name: "one", posting: started, gate: gate},
				"two": {name: "two", posting: started, gate: gate},
			}
			one.Engine.Register(board.SourceConsole, bot.Registration{Poster: posters["one"]})
			two.Engine.Register(board.SourceConsole, bot.Registration{Poster: posters["two"]})
			engines := map[string]*bot.Engine{"one": one.Engine, "two": two.Engine}
			if _, err := one.Engine.Submit(context.Background(), board.Request{Thread: general, User: "alice", Text: newspaperRequest}); err != nil {
				t.Fatal(err)
			}
			var at posting
			select {
			case at = <-started:
			case <-time.After(20 * time.Second):
				t.Fatal("no preview was posted")
			}
			other := map[string]string{"one": "two", "two": "one"}[at.replica]
			approver := map[int]string{1: "alice", 2: "bob"}[quorum] // the requester, or another member
			a, err := engines[other].Approve(context.Background(), at.proposal, approver)
			if err != nil {
				t.Fatalf("approve while the preview is posted: %v", err)
			}
			want := board.ProposalApproved
			if quorum > 1 {
				want = board.ProposalPending
			}
			if a.State != "" && a.State != want {
				t.Fatalf("approval = %+v", a)
			}
			// The decision's redraw runs on the other replica, finds no
			// message and says so; only then does the post return.
			missed := one.Prefix + ":preview-missed:{" + string(at.proposal) + "}"
			for deadline := time.Now().Add(20 * time.Second); one.Redis.Exists(context.Background(), missed).Val() == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the decision never tried to redraw the preview")
				}
			}
			open()
			posters[at.replica].WaitFor(t, "the preview redrawn", func(_ []bottest.PostedReply, _, updates []board.Proposal) bool {
				for _, u := range updates {
					if u.ID != at.proposal || u.Message != board.MessageRef("msg-"+string(at.proposal)) || u.State != want {
						continue
					}
					if quorum == 1 || (u.Quorum != nil && slices.Equal(u.Quorum.Approvals, []string{"bob"})) {
						return true
					}
				}
				return false
			})
			one.WaitIdle(t)
			two.WaitIdle(t)
			_, _, u1 := posters["one"].Snapshot()
			_, _, u2 := posters["two"].Snapshot()
			if n := len(u1) + len(u2); n != 1 {
				t.Fatalf("the preview was redrawn %d times, want once: %+v %+v", n, u1, u2)
			}
		})
	}
}
