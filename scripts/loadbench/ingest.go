package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bobnet/bobnet/signing"
)

// ingestClients is how many events are in flight at once, as in a busy
// workspace's burst of mentions.
const ingestClients = 64

// eventFunc makes the n-th event body of a run.
type eventFunc func(run string, n int64) []byte

// mention is the n-th app_mention of a run, by user Un in channel; its
// text names the channel, so the stand-in model can tell whose call it
// answers.
func mention(run string, n int64, channel string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T1", "api_app_id": "A1", "event_id": fmt.Sprint("Ev", run, "_", n),
		"event": map[string]any{"type": "app_mention", "user": fmt.Sprint("U", n), "text": "<@UBOBNET> plan our daily research newspaper (ref " + channel + ")",
			"ts": fmt.Sprintf("1700000000.%06d", n), "channel": channel},
	})
	return b
}

// floodEvents are every mention in one busy channel: past the channel's
// rate limit they are throttled, which must cost no more than taking them in.
func floodEvents(run string, n int64) []byte { return mention(run, n, "C_BUSY_"+run) }

// eachEvents are each mention in a channel of its own: every one is
// taken in and queued.
func eachEvents(run string, n int64) []byte { return mention(run, n, fmt.Sprint("C_", run, "_", n)) }

// ingestKinds are the ingest workload's two kinds of events, in the
// order their figures are printed.
var ingestKinds = []struct {
	name  string
	event eventFunc
}{{"one channel (flood)", floodEvents}, {"a channel each", eachEvents}}

// signedEvent is a POST of body to url, signed as Slack signs it.
func signedEvent(ctx context.Context, url string, body []byte) *http.Request {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", signing.SlackSignature(slackSecret, ts, body))
	return req
}

// ingestResult is one ingest run: requests answered per second and the
// 99th percentile of their latency.
type ingestResult struct {
	PerSecond float64
	P99       time.Duration
	N         int

	lat     []time.Duration // each answer's
	elapsed time.Duration
}

// mergeIngest is the result of the runs rs taken together: the answers
// of all over the time of all.
func mergeIngest(rs []ingestResult) ingestResult {
	var all ingestResult
	for _, r := range rs {
		all.lat = append(all.lat, r.lat...)
		all.elapsed += r.elapsed
	}
	all.N = len(all.lat)
	if all.elapsed > 0 {
		all.PerSecond = float64(all.N) / all.elapsed.Seconds()
	}
	all.P99 = percentile(all.lat, 99)
	return all
}

// ingestRun sends signed events to url from ingestClients clients for d
// and measures the answers; any answer but 200 fails it.
func ingestRun(ctx context.Context, c *http.Client, url, run string, d time.Duration, event eventFunc) (ingestResult, error) {
	var seq atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var firstErr error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for range ingestClients {
		wg.Go(func() {
			mine := make([]time.Duration, 0, 4096)
			var err error
			for time.Now().Before(deadline) && ctx.Err() == nil {
				req := signedEvent(ctx, url, event(run, seq.Add(1)))
				t0 := time.Now()
				resp, e := c.Do(req)
				if e != nil {
					err = e
					break
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mine = append(mine, time.Since(t0))
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("%s answered %d", url, resp.StatusCode)
					break
				}
			}
			mu.Lock()
			defer mu.Unlock()
			lat = append(lat, mine...)
			if err != nil && firstErr == nil {
				firstErr = err
				cancel()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return ingestResult{}, firstErr
	}
	return ingestResult{PerSecond: float64(len(lat)) / elapsed.Seconds(), P99: percentile(lat, 99), N: len(lat), lat: lat, elapsed: elapsed}, nil
}
