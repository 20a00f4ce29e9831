package run

import (
	"log/slog"
	"testing"
	"time"
)

// TestWorkerConfigDefaults: a Config that names no lease or poll gets
// serve's defaults, not a lease any replica could take at once (nor a
// renewal ticker of zero, which panics).
func TestWorkerConfigDefaults(t *testing.T) {
	w := NewWorker(nil, nil, nil, nil, nil, nil, Config{}, slog.New(slog.DiscardHandler))
	if w.cfg.Lease != DefaultLease || w.cfg.Poll != 2*time.Second || w.cfg.Workers != 1 {
		t.Fatalf("config = %+v", w.cfg)
	}
	w = NewWorker(nil, nil, nil, nil, nil, nil, Config{Workers: 3, Lease: 9 * time.Second, Poll: time.Second}, slog.New(slog.DiscardHandler))
	if w.cfg.Lease != 9*time.Second || w.cfg.Poll != time.Second || w.cfg.Workers != 3 {
		t.Fatalf("config = %+v", w.cfg)
	}
}
