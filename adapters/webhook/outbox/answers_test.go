package outbox_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bobnet/bobnet/adapters/webhook/outbox"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// TestGoneDisablesTheEndpoint: a receiver answering 410 Gone is never
// sent to again, by this sender or a new one: its pending events and the
// events emitted later are given up unsent, while another endpoint of the
// same channel still hears everything.
func TestGoneDisablesTheEndpoint(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	var goneHits atomic.Int32
	gone := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		goneHits.Add(1)
		w.WriteHeader(http.StatusGone)
	}))
	t.Cleanup(gone.Close)
	rc := newReceiver(t)
	ctx := context.Background()
	cfg := config(gone.URL+"/gone", rc.srv.URL+"/ok")
	o := outbox.New(cfg, store.New(pool, storetest.Logger(t)), storetest.Logger(t))
	for _, id := range []string{"p_1", "p_2", "p_3"} {
		if err := o.Emit(ctx, event(bot.EventProposalCreated, id)); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, o)
	// A restarted sender, and an event emitted after the 410.
	o = outbox.New(cfg, store.New(pool, storetest.Logger(t)), storetest.Logger(t))
	if err := o.Emit(ctx, event(bot.EventProposalCreated, "p_4")); err != nil {
		t.Fatal(err)
	}
	drain(t, o)
	if n := goneHits.Load(); n != 1 {
		t.Fatalf("the endpoint that answered 410 was tried %d times, want 1", n)
	}
	if got, _ := rc.snapshot(); len(got) != 4 {
		t.Fatalf("the other endpoint heard %d events, want 4", len(got))
	}
	if st, err := o.Status(ctx); err != nil || st != (outbox.Status{Delivered: 4, Failed: 4}) {
		t.Fatalf("status = %+v, %v", st, err)
	}
	var disabled int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM callback_endpoints_disabled WHERE endpoint = $1`, gone.URL+"/gone").Scan(&disabled); err != nil || disabled != 1 {
		t.Fatalf("disabled rows = %d, %v", disabled, err)
	}
}

// drain sends until nothing is due and no row is waiting for a retry
// shorter than a second.
func drain(t *testing.T, o *outbox.Outbox) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := o.SendDue(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			st, _ := o.Status(context.Background())
			if st.Pending == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			st, _ := o.Status(context.Background())
			t.Fatalf("still pending after 30s: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRetryAfterIsHonoured: a 503 with Retry-After: 2 is not retried for
// two seconds, although the backoff alone would retry within 20 ms.
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	var mu sync.Mutex
	var at []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		at = append(at, time.Now())
		if len(at) == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	o := outbox.New(config(srv.URL), store.New(pool, storetest.Logger(t)), storetest.Logger(t))
	if err := o.Emit(context.Background(), event(bot.EventProposalCreated, "p_1")); err != nil {
		t.Fatal(err)
	}
	drain(t, o)
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 2 {
		t.Fatalf("%d attempts, want 2", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < 2*time.Second {
		t.Fatalf("retried after %s; Retry-After asked for 2s", gap)
	}
}

// TestSlowReceiverWithinTheSpecTimeout: a receiver that takes 12 seconds
// to answer (inside the 15 to 30 s Standard Webhooks asks senders to
// wait) is delivered to on the first attempt.
func TestSlowReceiverWithinTheSpecTimeout(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		time.Sleep(12 * time.Second)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	cfg := config(srv.URL)
	cfg.RetryBase = time.Hour // a timed-out first attempt would not be retried within the test
	o := outbox.New(cfg, store.New(pool, storetest.Logger(t)), storetest.Logger(t))
	if err := o.Emit(context.Background(), event(bot.EventProposalCreated, "p_1")); err != nil {
		t.Fatal(err)
	}
	if _, err := o.SendDue(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, err := o.Status(context.Background()); err != nil || st != (outbox.Status{Delivered: 1}) || hits.Load() != 1 {
		var lastErr string
		_ = pool.QueryRow(context.Background(), `SELECT last_error FROM event_outbox`).Scan(&lastErr)
		t.Fatalf("status = %+v, %v after %d attempts (last error %q)", st, err, hits.Load(), lastErr)
	}
}
