package matrix_test

import (
	"context"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"

	"github.com/bobnet/bobnet/adapters/matrix"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// crashing is a lease whose holder never gives it back, like a replica
// that was killed: the others must wait for it to expire.
type crashing struct{ matrix.Lease }

func (crashing) Release(context.Context) error { return nil }

func crash(l matrix.Lease) matrix.Lease { return crashing{l} }

func TestMatrixOneSyncLoopAcrossReplicas(t *testing.T) {
	w := newWorld(t)
	a := w.start(crash)
	b := w.start(crash)
	w.openRoom()

	// Exactly one replica syncs, and it stays that way over several
	// renewals.
	var holder, other *replica
	deadline := time.Now().Add(30 * time.Second)
	for settled := 0; settled < 20 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		as, bs := a.ad.Syncing(), b.ad.Syncing()
		if as && bs {
			t.Fatal("both replicas run the sync loop")
		}
		switch {
		case as:
			holder, other, settled = a, b, settled+1
		case bs:
			holder, other, settled = b, a, settled+1
		}
	}
	if holder == nil {
		t.Fatal("no replica runs the sync loop")
	}
	r1 := w.say(w.alice, "BobNet plan our daily research newspaper", "", true)
	w.waitFor("preview from the first holder", w.preview(r1, 1))

	holder.stop() // dies without giving the lease back
	w.env.Engine.Register(board.SourceMatrix, bot.Registration{Poster: other.ad, Reminders: other.ad, PowerLevels: other.ad})
	r2 := w.say(w.alice, "BobNet plan our daily research newspaper, second edition", "", true)
	w.waitFor("preview from the replica that took over", w.preview(r2, 1))
	if !other.ad.Syncing() {
		t.Fatal("the surviving replica does not run the sync loop")
	}
	for _, r := range []id.EventID{r1, r2} {
		if n := w.count(w.preview(r, 1)); n != 1 {
			t.Fatalf("request %s answered %d times", r, n)
		}
	}
}
