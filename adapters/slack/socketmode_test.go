package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/slack-go/slack/socketmode"

	"github.com/bobnet/bobnet/adapters/slack"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/store/storetest"
)

// recordAcks is a Socket Mode connection that notes each ack and how many
// requests Redis held queued at that moment.
type recordAcks struct {
	t      *testing.T
	w      *world
	mu     sync.Mutex
	queued []int64 // requests on the stream when each ack was sent
}

func (r *recordAcks) Ack(req socketmode.Request, _ ...any) error {
	n, err := r.w.env.Queue.Len(context.Background())
	if err != nil {
		r.t.Errorf("read the request stream: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queued = append(r.queued, n)
	return nil
}

func (r *recordAcks) acks() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.queued...)
}

// A Socket Mode event is acked only once its request is queued: while the
// queue fails it is left unacked, so Slack delivers it again instead of
// the mention being lost, and the redelivery makes one request.
func TestSocketModeAcksAfterQueueing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ad, err := slack.New(context.Background(), slack.Config{BotToken: "xoxb-test", AppToken: "xapp-test", APIURL: w.slack.srv.URL + "/api/"},
		&failOnce{Engine: w.env.Engine}, redisstore.NewInFlight(w.env.Redis, w.env.Prefix), storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	w.env.Engine.Register(board.SourceSlack, bot.Registration{Poster: ad, Notifier: ad, Reminders: ad, Groups: ad})
	conn := &recordAcks{t: t, w: w}
	payload := json.RawMessage(mentionEvent("EvSocket", "1690000004.000001", "plan our daily research newspaper"))
	evt := socketmode.Event{Type: socketmode.EventTypeEventsAPI, Request: &socketmode.Request{Type: "events_api", EnvelopeID: "env-1", Payload: payload}}

	ad.SocketEvent(context.Background(), conn, evt)
	if acks := conn.acks(); len(acks) != 0 {
		t.Fatalf("acked %d times while the request could not be queued; Slack would not deliver it again", len(acks))
	}
	// Slack delivers the unacked envelope again; now the queue works.
	ad.SocketEvent(context.Background(), conn, evt)
	acks := conn.acks()
	if len(acks) != 1 {
		t.Fatalf("acks = %d after a queued redelivery, want 1", len(acks))
	}
	if acks[0] != 1 {
		t.Fatalf("acked with %d requests queued, want the ack after the enqueue (1)", acks[0])
	}
	w.slack.waitFor(t, "preview", isPreview)
	w.env.WaitIdle(t)
	if n := w.slack.count(isPreview); n != 1 {
		t.Fatalf("previews = %d, want 1", n)
	}
}

// forgetful is Redis-backed Memory whose thread lookups fail, as when
// Redis drops the connection.
type forgetful struct{ slack.Memory }

func (forgetful) Marked(context.Context, string) (bool, error) {
	return false, errors.New("redis: connection refused")
}

// A thread reply whose thread cannot be looked up is not acknowledged
// either way: HTTP mode answers 503 and Socket Mode leaves it unacked, so
// Slack delivers it again instead of the reply being dropped.
func TestThreadReplyWhenRedisFailsIsRedelivered(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ad, err := slack.New(context.Background(), slack.Config{BotToken: "xoxb-test", SigningSecret: secret, APIURL: w.slack.srv.URL + "/api/"},
		w.env.Engine, forgetful{redisstore.NewInFlight(w.env.Redis, w.env.Prefix)}, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	ad.Routes(r)
	w.serve(r)
	reply := threadMessage("Ev600", "1690000000.000601", "1690000000.000600", "add an RSS feed card")
	if resp := w.post(t, "/slack/events", "application/json", reply); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("HTTP: %d, want 503 so Slack retries", resp.StatusCode)
	}
	conn := &recordAcks{t: t, w: w}
	ad.SocketEvent(context.Background(), conn, socketmode.Event{Type: socketmode.EventTypeEventsAPI,
		Request: &socketmode.Request{Type: "events_api", EnvelopeID: "env-2", Payload: json.RawMessage(reply)}})
	if n := len(conn.acks()); n != 0 {
		t.Fatalf("Socket Mode acked %d times", n)
	}
}
