package bot

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A closing outbound posts what is queued behind a slow post, up to its
// flush time; past it the rest is dropped and the log counts them, and
// nothing new is taken, said as "stopped", not "full".
func TestOutboundCloseFlushesQueue(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	o := newOutbound(time.Second, 700*time.Millisecond, logger)
	var posted atomic.Int32
	started := make(chan struct{})
	slow := func(context.Context) {
		select {
		case <-started:
		default:
			close(started)
		}
		time.Sleep(200 * time.Millisecond)
		posted.Add(1)
	}
	for range 10 {
		if err := o.send("slack:C1", slow); err != nil {
			t.Fatal(err)
		}
	}
	<-started
	// Counted from the moment close begins: on a loaded machine this
	// goroutine may start late, while posts go on.
	before := posted.Load()
	begin := time.Now()
	o.close()
	took := time.Since(begin)
	// 200 ms each: the one being posted, then those that start within
	// the 700 ms flush; never all ten.
	if n := posted.Load(); n-before < 1 || n-before > 6 || n == 10 {
		t.Errorf("%d of 10 posted (%d of them during close), want those that fit in the flush time", n, n-before)
	}
	if took > 2*time.Second {
		t.Errorf("close took %v with a 700 ms flush time", took)
	}
	mu.Lock()
	log := logs.String()
	mu.Unlock()
	if !strings.Contains(log, "flush time ran out") || !strings.Contains(log, "dropped=") {
		t.Errorf("the drop is not logged: %s", log)
	}
	if err := o.send("slack:C1", slow); err != errOutboundClosed {
		t.Errorf("send after close: %v, want %v", err, errOutboundClosed)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
