package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// previewMentions is how many mentions each preview round sends at
// once, each in a channel of its own.
const previewMentions = 20

// phases splits each preview's time into the wait before its model call
// (the queue, and the work before the call) and the time from the
// model's answer to the preview's arrival.
func phases(acks map[string]time.Time, m *model, slack *slackStub) (before, after []time.Duration) {
	for ch, ack := range acks {
		s, ok := m.spanOf(ch)
		at, ok2 := slack.previewAt(ch)
		if ok && ok2 {
			before = append(before, s.Start.Sub(ack))
			after = append(after, at.Sub(s.End))
		}
	}
	return before, after
}

// afterModel are the times from each acknowledgement to its preview's
// arrival at the stand-in Slack, less the model's time; an error names
// the channels whose preview did not come.
func afterModel(acks map[string]time.Time, slack *slackStub, modelTime, wait time.Duration) ([]time.Duration, error) {
	channels := make([]string, 0, len(acks))
	for ch := range acks {
		channels = append(channels, ch)
	}
	got := slack.waitPreviews(channels, wait)
	var out []time.Duration
	var missing []string
	for _, ch := range channels {
		at, ok := got[ch]
		if !ok {
			missing = append(missing, ch)
			continue
		}
		out = append(out, at.Sub(acks[ch])-modelTime)
	}
	if len(missing) > 0 {
		return out, fmt.Errorf("no preview within %s in %d channels (%v)", wait, len(missing), missing)
	}
	return out, nil
}

// previewBobnet sends previewMentions signed mentions to BobNet's
// /slack/events at once, each in a fresh channel, and notes when each is
// acknowledged.
func previewBobnet(ctx context.Context, c *http.Client, url, run string) (map[string]time.Time, error) {
	acks := map[string]time.Time{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, previewMentions)
	start := make(chan struct{})
	for i := range previewMentions {
		channel := fmt.Sprintf("CPV_%s_%d", run, i)
		body := mention(run, int64(i), channel)
		wg.Go(func() {
			req := signedEvent(ctx, url+"/slack/events", body)
			<-start
			resp, err := c.Do(req)
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			at := time.Now()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("mention: status %d", resp.StatusCode)
				return
			}
			mu.Lock()
			acks[channel] = at
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	return acks, <-errs
}

// previewBare queues previewMentions entries on the bare path's stream at
// once, each for a fresh channel, and notes when each XADD was sent: a
// worker may read the entry and call the model before the XADD's reply
// is back, so its return would place the model call before the request.
func previewBare(ctx context.Context, rdb redis.UniversalClient, stream, run string) (map[string]time.Time, error) {
	acks := map[string]time.Time{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, previewMentions)
	start := make(chan struct{})
	for i := range previewMentions {
		channel := fmt.Sprintf("CPB_%s_%d", run, i)
		wg.Go(func() {
			<-start
			at := time.Now()
			err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"channel": channel, "text": "plan our daily research newspaper (ref " + channel + ")"}}).Err()
			if err != nil {
				errs <- fmt.Errorf("xadd: %w", err)
				return
			}
			mu.Lock()
			acks[channel] = at
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	return acks, <-errs
}
