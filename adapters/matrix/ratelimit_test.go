package matrix_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/adapters/matrix"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

// fakeHomeserver answers whoami and the display name, and hands every
// send to send.
func fakeHomeserver(t *testing.T, send http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/account/whoami"):
			_ = json.NewEncoder(w).Encode(map[string]string{"user_id": "@bobnet:example.org", "device_id": "DEV"})
		case strings.Contains(r.URL.Path, "/profile/"):
			_ = json.NewEncoder(w).Encode(map[string]string{"displayname": "BobNet"})
		case strings.Contains(r.URL.Path, "/send/"):
			send(w, r)
		default:
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(map[string]string{"errcode": "M_UNRECOGNIZED"})
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func fakeAdapter(t *testing.T, hs string, timeout time.Duration) *matrix.Adapter {
	ad, err := matrix.New(context.Background(), matrix.Config{
		Homeserver: hs, UserID: "@bobnet:example.org", AccessToken: "token", CallTimeout: timeout,
	}, nil, storetest.NewStore(t), nopMemory{}, nil, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ad.Close)
	return ad
}

var thread = board.Thread{Channel: board.Channel{Source: board.SourceMatrix, ID: "!room:example.org"}, ID: "$root"}

func TestMatrixHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var at []time.Time
	hs := fakeHomeserver(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		at = append(at, time.Now())
		n := len(at)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusTooManyRequests)
			_ = json.NewEncoder(w).Encode(map[string]any{"errcode": "M_LIMIT_EXCEEDED", "error": "Too many requests", "retry_after_ms": 300})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"event_id": "$sent"})
	})
	ad := fakeAdapter(t, hs.URL, 10*time.Second)
	if err := ad.Reply(context.Background(), thread, board.Reply{Kind: board.ReplyInfo, Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(at) != 2 {
		t.Fatalf("%d sends, want 2", len(at))
	}
	if gap := at[1].Sub(at[0]); gap < 300*time.Millisecond {
		t.Fatalf("retried after %s, before the server's retry_after_ms of 300", gap)
	}
}

func TestMatrixCallsTimeOut(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	hs := fakeHomeserver(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select { // a homeserver that never answers
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	ad := fakeAdapter(t, hs.URL, 200*time.Millisecond)
	err := ad.Reply(context.Background(), thread, board.Reply{Kind: board.ReplyInfo, Text: "hello"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reply = %v, want a deadline exceeded", err)
	}
}
