package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/signing"
)

// The runs of the soak: boards made in Slack, scheduled hourly in
// Europe/Berlin on a test clock (BOBNET_TEST_CLOCK) that moves an hour
// every few seconds through the spring-forward night, then jumps to the
// fall-back night; their cards worked by the model and by a hook (the
// receiver), reviewed from the REST API, Slack's buttons and slash
// commands, some of them at once; one channel over its model budget.
const (
	runsChannel   = "C_RUNS"
	budgetChannel = "C_BUDGET"
	runsZone      = "Europe/Berlin"
	// runLease is the soak's BOBNET_RECLAIM_IDLE, the runners' lease.
	runLease    = 3 * time.Second
	maxAttempts = 3 // store's, per round
	// modelRetries is the model client's retries of one call after a
	// 5xx (planner.ClientConfig's default), and modelRetryWindow the
	// most a retry follows the failed call (backoff from 500 ms, doubling,
	// with jitter, plus a loaded machine's delay).
	modelRetries     = 3
	modelRetryWindow = 10 * time.Second
)

// The fake clock's two stretches: the night of 29 March 2026 (02:00 CET
// becomes 03:00 CEST at 01:00 UTC) and the night of 25 October 2026
// (03:00 CEST becomes 02:00 CET at 01:00 UTC).
var (
	springStart = time.Date(2026, 3, 28, 22, 0, 0, 0, time.UTC)
	autumnStart = time.Date(2026, 10, 24, 22, 0, 0, 0, time.UTC)
)

// runBoard is one board the soak runs.
type runBoard struct {
	ID, Key, Channel, Cron string
}

// fakeClock is the file every replica reads as the scheduler's now, and
// the hours it has shown.
type fakeClock struct {
	path string

	mu    sync.Mutex
	shown []time.Time // every time written, in order
}

func newFakeClock(t *testing.T, start time.Time) *fakeClock {
	c := &fakeClock{path: filepath.Join(t.TempDir(), "clock")}
	c.set(t, start)
	return c
}

// set writes t, atomically (a rename), so a replica never reads half.
func (c *fakeClock) set(t *testing.T, now time.Time) {
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(now.UTC().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		t.Error(err)
		return
	}
	if err := os.Rename(tmp, c.path); err != nil {
		t.Error(err)
		return
	}
	c.mu.Lock()
	c.shown = append(c.shown, now)
	c.mu.Unlock()
}

func (c *fakeClock) times() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Time(nil), c.shown...)
}

// runDriver is the people and tools around the runs.
type runDriver struct {
	w      *workload
	svc    *services
	slk    *slackAPI
	clock  *fakeClock
	boards []runBoard

	mu       sync.Mutex
	reviews  map[string]int // "run card round" -> decisions sent
	stalls   []string       // slots the scheduler did not fire in time
	lingered []string       // cards left unclaimed or held too long
}

// setupRuns makes the boards through Slack mentions, approves them,
// schedules them hourly from the fake clock's start, and puts the budget
// channel over its budget.
func setupRuns(t *testing.T, w *workload, svc *services, slk *slackAPI, clock *fakeClock) *runDriver {
	t.Helper()
	ctx := context.Background()
	d := &runDriver{w: w, svc: svc, slk: slk, clock: clock, reviews: map[string]int{}}
	plans := []struct{ channel, cron string }{
		{runsChannel, "0 * * * *"}, {runsChannel, "@hourly"}, {runsChannel, "0 * * * *"}, {budgetChannel, "0 * * * *"},
	}
	for i, p := range plans {
		tag := w.ledger.tag("run")
		var proposal string
		asked := map[string]bool{}
		deadline := time.Now().Add(2 * time.Minute)
		// Asked again in a new mention after 10 s without a preview, as a
		// person would: the model sometimes fails a plan, and Slack's
		// redelivery of the same mention is its first request again.
		for attempt := 0; proposal == "" && time.Now().Before(deadline); attempt++ {
			ts := fmt.Sprintf("1810000000.%06d", 100*attempt+i+1)
			asked[ts] = true
			body := fmt.Appendf(nil, `{"type":"event_callback","team_id":"T1","event_id":"EvRun%d_%d","event":{"type":"app_mention","user":"U_ALICE","text":"<@UBOT> plan our daily research newspaper %s","ts":%q,"channel":%q}}`, i, attempt, tag, ts, p.channel)
			w.pick(ctx, func(r *replica) int { return r.post(ctx, "/slack/events", slackHeaders(w.slackSecret, body), body) })
			for range 20 {
				for _, m := range slk.messages() {
					if asked[m.ThreadTS] && m.Proposal != "" {
						proposal = m.Proposal
					}
				}
				if proposal != "" {
					break
				}
				time.Sleep(500 * time.Millisecond)
			}
		}
		if proposal == "" {
			t.Fatalf("run board %d: no preview in Slack", i)
		}
		var id string
		w.pick(ctx, func(r *replica) int {
			code, out := r.call(ctx, "POST", "/api/v1/proposals/"+proposal+"/approve", map[string]string{"user": "U_BOB"})
			id, _ = out["board_id"].(string)
			return code
		})
		if id == "" {
			t.Fatalf("run board %d: approving %s made no board", i, proposal)
		}
		var key string
		if conn, err := dial(ctx, svc); err == nil {
			_ = conn.QueryRow(ctx, `SELECT key FROM boards WHERE id = $1`, id).Scan(&key)
			_ = conn.Close(ctx)
		}
		if key == "" {
			t.Fatalf("run board %d: no key for %s", i, id)
		}
		code := w.pick(ctx, func(r *replica) int {
			code, _ := r.call(ctx, "PUT", "/api/v1/boards/"+id+"/schedule", map[string]string{"user": "U_ALICE", "cron": p.cron, "timezone": runsZone})
			return code
		})
		if code != http.StatusOK {
			t.Fatalf("schedule %s: %d", id, code)
		}
		d.boards = append(d.boards, runBoard{ID: id, Key: key, Channel: p.channel, Cron: p.cron})
	}
	code := w.pick(ctx, func(r *replica) int {
		code, _ := r.call(ctx, "PUT", "/api/v1/policies/slack:"+budgetChannel, map[string]any{
			"deciders": []string{"U_BOB"}, "approvals": 1, "self_approval": true, "budget": map[string]any{"tokens_per_day": 1}})
		return code
	})
	if code != http.StatusOK {
		t.Fatalf("budget policy: %d", code)
	}
	return d
}

// clockLoop moves the clock an hour every step: through the spring night
// for the first half of the workload, then on from the autumn night.
// Before each step it waits (a minute at most) until every board's
// schedule has taken the slot the clock shows, so each slot fires on its
// own; a stall is noted, and the counts then tell whether a slot was lost.
func (d *runDriver) clockLoop(ctx context.Context, t *testing.T, length, step time.Duration) {
	now := springStart
	jumped := false
	started := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(step):
		}
		d.awaitSlots(ctx, now)
		if !jumped && time.Since(started) > length/2 {
			jumped, now = true, autumnStart
		} else {
			now = now.Add(time.Hour)
		}
		d.clock.set(t, now)
	}
}

// awaitSlots waits until every schedule's last slot is the latest slot
// at or before now, or a minute.
func (d *runDriver) awaitSlots(ctx context.Context, now time.Time) {
	deadline := time.Now().Add(time.Minute)
	for ctx.Err() == nil {
		behind := d.behind(ctx, now)
		if len(behind) == 0 {
			return
		}
		if time.Now().After(deadline) {
			d.mu.Lock()
			d.stalls = append(d.stalls, fmt.Sprintf("at %s: %s", now.Format(time.RFC3339), strings.Join(behind, ", ")))
			d.mu.Unlock()
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// behind lists the boards whose schedule has not reached the latest slot
// at or before now ("" while Postgres is away: not known).
func (d *runDriver) behind(ctx context.Context, now time.Time) []string {
	conn, err := dial(ctx, d.svc)
	if err != nil {
		return []string{"postgres away"}
	}
	defer conn.Close(ctx)
	var out []string
	for _, b := range d.boards {
		slots := expectedSlots(springStart, now)
		if now.After(autumnStart) || now.Equal(autumnStart) {
			slots = expectedSlots(autumnStart.Add(-time.Hour), now)
		}
		if len(slots) == 0 {
			continue
		}
		var last time.Time
		if err := conn.QueryRow(ctx, `SELECT last_slot FROM schedules WHERE board_id = $1`, b.ID).Scan(&last); err != nil {
			return []string{"postgres away"}
		}
		if want := slots[len(slots)-1]; last.Before(want) {
			out = append(out, b.Key+" at "+last.UTC().Format(time.RFC3339))
		}
	}
	return out
}

// expectedSlots are the slots of an hourly schedule in Europe/Berlin in
// (from, to], by the rule docs/runs.md states: slots are wall-clock
// hours, a wall-clock time the clocks pass twice fires the first time
// only, and the hour the clocks skip is one slot with the next. Worked out
// here from the zone's readings, not from BobNet's cron.
func expectedSlots(from, to time.Time) []time.Time {
	loc, _ := time.LoadLocation(runsZone)
	seen := map[string]bool{}
	var out []time.Time
	// Readings from a day before from, so a repeated hour just after from
	// is known as repeated.
	for h := from.Add(-24 * time.Hour).Truncate(time.Hour); !h.After(to); h = h.Add(time.Hour) {
		l := h.In(loc)
		if l.Minute() != 0 {
			continue
		}
		wall := l.Format("2006-01-02T15")
		if seen[wall] {
			continue
		}
		seen[wall] = true
		if h.After(from) {
			out = append(out, h)
		}
	}
	return out
}

// reviewLoop decides the cards waiting in Review until ctx ends: mostly
// accept, sometimes send back (once or twice a card), from a surface
// picked at random — the REST route, Slack's Accept button, a slash
// command — and now and then from two at once.
func (d *runDriver) reviewLoop(ctx context.Context) {
	for ctx.Err() == nil {
		time.Sleep(300 * time.Millisecond)
		conn, err := dial(ctx, d.svc)
		if err != nil {
			continue
		}
		rows, err := conn.Query(ctx, `SELECT rc.run_id, rc.card_id, rc.rounds, b.key || '-' || c.number, b.channel
FROM run_cards rc JOIN runs r ON r.id = rc.run_id JOIN cards c ON c.id = rc.card_id JOIN boards b ON b.id = c.board_id
WHERE r.state = 'running' AND c.status = 'Review'`)
		type waiting struct {
			run, card, handle, channel string
			round                      int
		}
		var ws []waiting
		if err == nil {
			for rows.Next() {
				var x waiting
				if rows.Scan(&x.run, &x.card, &x.round, &x.handle, &x.channel) == nil {
					ws = append(ws, x)
				}
			}
			rows.Close()
		}
		_ = conn.Close(ctx)
		for _, x := range ws {
			key := fmt.Sprintf("%s %s %d", x.run, x.card, x.round)
			d.mu.Lock()
			sent := d.reviews[key]
			d.reviews[key]++
			d.mu.Unlock()
			if sent > 0 && sent%10 != 0 {
				continue // decided a moment ago; tried again every few seconds
			}
			accept := x.round >= 2 || rand.IntN(100) < 70
			reason := fmt.Sprintf("cite more sources round=%d", x.round+1)
			n := 1
			if rand.IntN(100) < 25 {
				n = 2
			}
			var wg sync.WaitGroup
			for range n {
				wg.Go(func() { d.review(ctx, x.run, x.card, x.handle, x.round, accept, reason) })
			}
			wg.Wait()
		}
	}
}

// review sends one decision from a surface picked at random.
func (d *runDriver) review(ctx context.Context, run, card, handle string, round int, accept bool, reason string) {
	r := d.w.replicas[rand.IntN(len(d.w.replicas))]
	switch n := rand.IntN(3); {
	case n == 0:
		decision := "send_back"
		if accept {
			decision = "accept"
		}
		r.call(ctx, "POST", "/api/v1/runs/"+run+"/cards/"+card+"/review", map[string]any{"user": "U_BOB", "decision": decision, "reason": reason, "round": round})
	case n == 1 && accept:
		value := fmt.Sprintf("%s %s %d", run, card, round)
		var msg slackMessage
		for _, m := range d.slk.messages() {
			if m.Review == value {
				msg = m
			}
		}
		if msg.TS == "" {
			return // not announced yet (or the post failed): another surface next time
		}
		payload := fmt.Sprintf(`{"type":"block_actions","trigger_id":"T-%d","user":{"id":"U_BOB"},"channel":{"id":%q},"container":{"type":"message","message_ts":%q,"channel_id":%q,"thread_ts":%q},"message":{"ts":%q,"thread_ts":%q},"actions":[{"action_id":"bobnet_review_accept","block_id":"b","type":"button","value":%q,"action_ts":"1"}]}`,
			rand.Int64(), msg.Channel, msg.TS, msg.Channel, msg.ThreadTS, msg.TS, msg.ThreadTS, value)
		body := []byte("payload=" + url.QueryEscape(payload))
		h := slackHeaders(d.w.slackSecret, body)
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		r.post(ctx, "/slack/interactivity", h, body)
	default:
		text := "accept " + handle
		if !accept {
			text = "sendback " + handle + " " + reason
		}
		channel := runsChannel
		body := []byte(url.Values{"command": {"/bobnet"}, "text": {text}, "channel_id": {channel}, "user_id": {"U_BOB"}, "team_id": {"T1"}}.Encode())
		h := slackHeaders(d.w.slackSecret, body)
		h.Set("Content-Type", "application/x-www-form-urlencoded")
		r.post(ctx, "/slack/commands", h, body)
	}
}

// slackHeaders signs body as Slack does.
func slackHeaders(secret string, body []byte) http.Header {
	now := strconv.FormatInt(time.Now().Unix(), 10)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("X-Slack-Request-Timestamp", now)
	h.Set("X-Slack-Signature", signing.SlackSignature(secret, now, body))
	return h
}
