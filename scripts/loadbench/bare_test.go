package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/store/storetest"
)

func TestBareApproveWritesTheBoardOnce(t *testing.T) {
	pool := storetest.NewPool(t)
	rdb := bottest.Redis(t)
	prefix := bottest.Prefix() + ":"
	ctx := context.Background()
	srv := httptest.NewServer(bareApprove(rdb, pool, prefix))
	defer srv.Close()
	c := newClient(4)
	count := func() (boards, cards, links int) {
		t.Helper()
		err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM boards), (SELECT count(*) FROM cards), (SELECT count(*) FROM card_links)`).Scan(&boards, &cards, &links)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	planJSON, _ := json.Marshal(benchPlan())
	if err := rdb.Set(ctx, prefix+"p_one", planJSON, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	code, out, err := call(ctx, c, http.MethodPost, srv.URL+"/api/v1/proposals/p_one/approve", map[string]string{"user": "alice"})
	if err != nil || code != http.StatusOK || !strings.Contains(string(out), `"board_id":"b_`) {
		t.Fatalf("approve = %d %s %v; want 200 with a board id", code, out, err)
	}
	if b, c, l := count(); b != 1 || c != 64 || l != 63 {
		t.Fatalf("written: %d boards, %d cards, %d links; want 1, 64, 63", b, c, l)
	}
	var key, channel string
	if err := pool.QueryRow(ctx, `SELECT key, channel FROM boards`).Scan(&key, &channel); err != nil || key != "BOAR" || channel != bareChannel {
		t.Errorf("board key %q in %q (%v); want BOAR in %s, as BobNet names it", key, channel, err, bareChannel)
	}
	// Wrong input is refused and writes nothing.
	if err := rdb.Set(ctx, prefix+"p_garbled", "{not json", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{
		"/api/v1/proposals/p_missing/approve": http.StatusNotFound,
		"/api/v1/proposals/p_garbled/approve": http.StatusInternalServerError,
		"/api/v1/boards":                      http.StatusNotFound,
	} {
		if code, out, err := call(ctx, c, http.MethodPost, srv.URL+path, nil); err != nil || code != want {
			t.Errorf("POST %s = %d %s %v; want %d", path, code, out, err, want)
		}
	}
	if b, c, l := count(); b != 1 || c != 64 || l != 63 {
		t.Errorf("after refused approvals: %d boards, %d cards, %d links; want 1, 64, 63", b, c, l)
	}
}

func TestBoardKeyIsBobNets(t *testing.T) {
	for name, want := range map[string]string{"Big board": "BOAR", "Daily research newspaper": "NEWS", "!!": "CARD", "1st plan": "PLAN", "Go": "GO"} {
		if got := boardKey(name); got != want {
			t.Errorf("boardKey(%q) = %q; want %q", name, got, want)
		}
	}
}

func TestBareIngestQueuesOnlySignedEvents(t *testing.T) {
	rdb := bottest.Redis(t)
	stream := bottest.Prefix() + ":events"
	ctx := context.Background()
	t.Cleanup(func() { rdb.Del(context.Background(), stream) })
	srv := httptest.NewServer(bareIngest(rdb, []string{stream}, false, slackSecret))
	defer srv.Close()
	body := eachEvents("test", 1)
	resp, err := http.DefaultClient.Do(signedEvent(ctx, srv.URL, body))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("signed event = %v %v; want 200", resp, err)
	}
	resp.Body.Close()
	forged := signedEvent(ctx, srv.URL, body)
	forged.Header.Set("X-Slack-Signature", "v0=00")
	resp, err = http.DefaultClient.Do(forged)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("forged event = %v %v; want 401", resp, err)
	}
	resp.Body.Close()
	entries, err := rdb.XRange(ctx, stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Values["body"] != string(body) {
		t.Errorf("stream = %v; want the signed event once", entries)
	}
}

func TestBarePreviewPostsTheModelsPlan(t *testing.T) {
	rdb := bottest.Redis(t)
	stream := bottest.Prefix() + ":requests"
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { rdb.Del(context.Background(), stream) })
	m := newModel(50*time.Millisecond, false)
	model := httptest.NewServer(m)
	defer model.Close()
	slack := newSlackStub()
	slackSrv := httptest.NewServer(slack)
	defer slackSrv.Close()
	b := &barePreview{rdb: rdb, stream: stream, group: "bare", modelURL: model.URL + "/v1", slackURL: slackSrv.URL + "/api/",
		client: newClient(4), onError: func(err error) { t.Error(err) }}
	if err := rdb.XGroupCreateMkStream(ctx, stream, "bare", "$").Err(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.run(ctx, 3)
	}()
	defer func() {
		cancel()
		<-done
	}()
	acks, err := previewBare(ctx, rdb, stream, "t")
	if err != nil {
		t.Fatal(err)
	}
	lat, err := afterModel(acks, slack, 50*time.Millisecond, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(lat) != previewMentions || m.calls.Load() != previewMentions {
		t.Errorf("%d previews after %d model calls; want %d of each", len(lat), m.calls.Load(), previewMentions)
	}
	for _, d := range lat {
		if d < 0 {
			t.Errorf("a preview %s before its model answered", d)
		}
	}
	before, after := phases(acks, m, slack)
	if len(before) != previewMentions || len(after) != previewMentions {
		t.Errorf("phases of %d and %d previews; want %d (the model tells each request's call by its ref)", len(before), len(after), previewMentions)
	}
	for i := range after {
		if before[i] < 0 || after[i] < 0 {
			t.Errorf("preview %d: %s before its model call, %s after its answer; want neither negative", i, before[i], after[i])
		}
	}
	// A worker acknowledges its entry just after its post, which the
	// harness may see first: wait a moment for the last acknowledgements.
	deadline := time.Now().Add(5 * time.Second)
	for {
		pending, err := rdb.XPending(ctx, stream, "bare").Result()
		if err == nil && pending.Count == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("pending after the previews: %v %v; want every entry acknowledged", pending, err)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestModelAnswersThePlanStreamedOrNot(t *testing.T) {
	srv := httptest.NewServer(newModel(0, false))
	defer srv.Close()
	for _, stream := range []bool{false, true} {
		body := `{"model":"bench","messages":[{"role":"user","content":"plan"}],"stream":` + map[bool]string{false: "false", true: "true"}[stream] + `}`
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		s := string(raw)
		if stream {
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") || !strings.HasSuffix(s, "data: [DONE]\n\n") {
				t.Errorf("streamed answer: %s %.200q", resp.Header.Get("Content-Type"), s)
			}
			continue
		}
		var out struct {
			Choices []struct {
				Message struct{ Content string }
			}
		}
		if err := json.Unmarshal(raw, &out); err != nil || len(out.Choices) != 1 {
			t.Fatalf("answer %.200q: %v", s, err)
		}
		var env struct {
			Actions []struct {
				Cards []any
				Links []any
			}
		}
		if err := json.Unmarshal([]byte(out.Choices[0].Message.Content), &env); err != nil || len(env.Actions) != 1 || len(env.Actions[0].Cards) != 64 || len(env.Actions[0].Links) != 63 {
			t.Errorf("the plan: %v, %+v; want one action of 64 cards and 63 links", err, env)
		}
	}
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader("{"))
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a broken request = %v %v; want 400", resp, err)
	}
}

func TestBareIngestSpreadsOverStreamsAndWaitsForAReplica(t *testing.T) {
	rdb := bottest.Redis(t)
	streams := bareStreams(bottest.Prefix()+":events", 4)
	ctx := context.Background()
	t.Cleanup(func() { rdb.Del(context.Background(), streams...) })
	srv := httptest.NewServer(bareIngest(rdb, streams, false, slackSecret))
	defer srv.Close()
	for i := range 40 {
		resp, err := http.DefaultClient.Do(signedEvent(ctx, srv.URL, eachEvents("spread", int64(i))))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("event %d = %v %v; want 200", i, resp, err)
		}
		resp.Body.Close()
	}
	var total int64
	for _, s := range streams {
		n := rdb.XLen(ctx, s).Val()
		if n == 0 {
			t.Errorf("stream %s has no event of 40", s)
		}
		total += n
	}
	if total != 40 {
		t.Errorf("streams hold %d events; want 40", total)
	}
	// The test Redis has no replica: WAIT 1 is answered 0, and the event
	// is refused as not durable.
	waiting := httptest.NewServer(bareIngest(rdb, streams, true, slackSecret))
	defer waiting.Close()
	resp, err := http.DefaultClient.Do(signedEvent(ctx, waiting.URL, eachEvents("spread", 99)))
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("event with no replica to wait for = %v %v; want 503", resp, err)
	}
	resp.Body.Close()
}
