package systemtest

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/bobnet/bobnet/web/webtest"
)

// BOBNET_STREAMS_PER_CALLER and BOBNET_STREAMS set the event stream caps.
func TestStreamCapsAreSettings(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"BOBNET_STREAMS_PER_CALLER": "1", "BOBNET_STREAMS": "2"}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Callers without a token are told apart by address: the loopback
	// network answers from any 127.x address.
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	for _, c := range []struct {
		from string
		want int
	}{{"127.0.0.1", http.StatusOK}, {"127.0.0.1", http.StatusTooManyRequests}, {"127.0.0.2", http.StatusOK}, {"127.0.0.3", http.StatusServiceUnavailable}} {
		req, _ := http.NewRequestWithContext(ctx, "GET", a.URL+"/api/v1/channels/general/events", nil)
		resp, err := from(c.from).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("stream from %s: %d, want %d", c.from, resp.StatusCode, c.want)
		}
	}
}

// The console page whose stream is refused (the caller's cap is full)
// connects again by itself once a place is free, which a browser does not
// do after a 429.
func TestConsoleRetriesARefusedStream(t *testing.T) {
	t.Parallel()
	browser := webtest.Browser(t)
	a := start(t, withEnv(map[string]string{"BOBNET_STREAMS_PER_CALLER": "1"}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.URL+"/api/v1/channels/other/events", nil)
	hold, err := http.DefaultClient.Do(req)
	if err != nil || hold.StatusCode != http.StatusOK {
		t.Fatalf("first stream: %v %v", err, hold)
	}
	if err := chromedp.Do(browser, chromedp.Navigate(a.URL+"/c/newsroom"), chromedp.WaitVisible(chromedp.CSS("#text"))); err != nil {
		t.Fatal(err)
	}
	waitFor(t, browser, "the refused stream", `document.getElementById('conn').textContent.includes('reconnecting')`)
	hold.Body.Close()
	waitFor(t, browser, "the stream once a place is free", `document.getElementById('conn').textContent.includes('connected')`)
}
