package app

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/store/storetest"
)

// Many slow uploads to /slack/*, unsigned or with a bogus signature,
// hold neither memory nor goroutines for long: unsigned ones are refused
// from their headers without reading the body, only a bounded number of
// bodies are read at once, and the read timeout closes every connection.
func TestSlowUnsignedUploadsAreBounded(t *testing.T) {
	env := bottest.New(t)
	ad, err := slack.New(context.Background(), slack.Config{BotToken: "xoxb-test", SigningSecret: "s3cret", APIURL: "http://127.0.0.1:1/api/"},
		env.Engine, redisstore.NewInFlight(env.Redis, env.Prefix), storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	ad.Routes(r)
	const readTimeout = 2 * time.Second
	srv := newHTTPServer(r, serverLimits{ReadHeader: readTimeout, Read: readTimeout, Write: 5 * time.Second, Idle: 5 * time.Second})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutines := runtime.NumGoroutine()

	const each = 150
	chunk := strings.Repeat("x", 100<<10)
	var conns []net.Conn
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 2 * each {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			head := "POST /slack/events HTTP/1.1\r\nHost: bobnet\r\nContent-Type: application/json\r\n"
			if i%2 == 0 {
				head += "Content-Length: 900000\r\n" // and no signature at all
			} else {
				ts := strconv.FormatInt(time.Now().Unix(), 10)
				head += fmt.Sprintf("Content-Length: 200000\r\nX-Slack-Request-Timestamp: %s\r\nX-Slack-Signature: v0=%s\r\n", ts, strings.Repeat("ab", 32))
			}
			// Headers and 100 KB, then nothing more: a slow upload.
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Write([]byte(head + "\r\n" + chunk))
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
	})

	// While they stall: memory and goroutines stay bounded.
	time.Sleep(readTimeout / 2)
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	if grown := int64(during.HeapInuse) - int64(before.HeapInuse); grown > 64<<20 {
		t.Errorf("heap grew by %d MiB during %d slow uploads", grown>>20, 2*each)
	}
	if n := runtime.NumGoroutine(); n > goroutines+2*each+50 {
		t.Errorf("goroutines %d -> %d", goroutines, n)
	}

	// Every connection is answered and closed by the server within the
	// read timeout (and a margin), never left open.
	statuses := map[string]int{}
	deadline := time.Now().Add(readTimeout + 3*time.Second)
	for _, c := range conns {
		_ = c.SetReadDeadline(deadline)
		br := bufio.NewReader(c)
		line, _ := br.ReadString('\n')
		if f := strings.Fields(line); len(f) > 1 {
			statuses[f[1]]++
		} else {
			statuses["closed"]++
		}
		for {
			if _, err := br.ReadByte(); err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					t.Fatalf("a connection was still open %s after the read timeout", 3*time.Second)
				}
				break
			}
		}
	}
	if statuses["401"] < each {
		t.Errorf("statuses = %v; want every unsigned upload refused with 401", statuses)
	}
	if statuses["200"] > 0 {
		t.Errorf("statuses = %v; a bogus upload was accepted", statuses)
	}
	// And the goroutines go away with the connections.
	for end := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > goroutines+20 && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines+20 {
		t.Errorf("goroutines after: %d, before: %d", n, goroutines)
	}
	if n := len(env.Model.Requests()); n != 0 {
		t.Errorf("the model was asked %d times", n)
	}
}
