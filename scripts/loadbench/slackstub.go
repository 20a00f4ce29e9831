package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// previewMark is in every final preview's blocks: its Approve button's
// action id. A call carrying it is the preview's arrival.
const previewMark = "bobnet_approve"

// previewMethods are the calls that may carry a final preview: a new
// message, an update of one (a streamed draft finished) or a stream's end.
var previewMethods = map[string]bool{"chat.postMessage": true, "chat.update": true, "chat.stopStream": true}

// slackStub is the stand-in Slack Web API: it answers each method in
// Slack's wire format (form or JSON in, {"ok":true,…} out; a method it
// does not know gets ok too) and notes when each channel's final preview
// arrives.
type slackStub struct {
	mu       sync.Mutex
	previews map[string]time.Time // channel -> first call carrying its preview
	seq      atomic.Int64
	calls    atomic.Int64
}

func newSlackStub() *slackStub { return &slackStub{previews: map[string]time.Time{}} }

func (s *slackStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	s.calls.Add(1)
	method := r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]
	body, _ := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	channel := requestChannel(r.Header.Get("Content-Type"), body)
	if previewMethods[method] && channel != "" && strings.Contains(string(body), previewMark) {
		s.mu.Lock()
		if _, ok := s.previews[channel]; !ok {
			s.previews[channel] = at
		}
		s.mu.Unlock()
	}
	ts := fmt.Sprintf("1800000000.%06d", s.seq.Add(1))
	var out map[string]any
	switch method {
	case "auth.test":
		out = map[string]any{"url": "https://bench.slack.test/", "team": "Bench", "user": "bobnet", "team_id": "T1", "user_id": "UBOBNET", "bot_id": "BBOBNET"}
	case "chat.postMessage", "chat.startStream", "chat.postEphemeral":
		out = map[string]any{"channel": channel, "ts": ts, "message_ts": ts, "message": map[string]any{"ts": ts, "text": ""}}
	case "chat.update", "chat.appendStream", "chat.stopStream":
		out = map[string]any{"channel": channel, "ts": ts}
	case "conversations.replies", "conversations.history":
		out = map[string]any{"messages": []any{}, "has_more": false}
	case "users.info":
		out = map[string]any{"user": map[string]any{"id": "U1", "name": "bench", "real_name": "Bench", "tz": "UTC"}}
	case "chat.getPermalink":
		out = map[string]any{"channel": channel, "permalink": "https://bench.slack.test/archives/" + channel}
	default:
		out = map[string]any{}
	}
	out["ok"] = true
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// requestChannel is the channel a Web API call names, in a form or a
// JSON body.
func requestChannel(contentType string, body []byte) string {
	if strings.HasPrefix(contentType, "application/json") {
		var v struct {
			Channel string `json:"channel"`
		}
		_ = json.Unmarshal(body, &v)
		return v.Channel
	}
	q, err := url.ParseQuery(string(body))
	if err != nil {
		return ""
	}
	return q.Get("channel")
}

// previewAt is when channel's final preview arrived; false before it has.
func (s *slackStub) previewAt(channel string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.previews[channel]
	return t, ok
}

// waitPreviews waits until every channel's preview has arrived or the
// timeout passes, and returns those that have.
func (s *slackStub) waitPreviews(channels []string, timeout time.Duration) map[string]time.Time {
	deadline := time.Now().Add(timeout)
	for {
		got := map[string]time.Time{}
		for _, c := range channels {
			if t, ok := s.previewAt(c); ok {
				got[c] = t
			}
		}
		if len(got) == len(channels) || time.Now().After(deadline) {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
}
