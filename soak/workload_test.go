package soak

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bobnet/bobnet/signing"
)

// request is a request BobNet acknowledged (202 from the API or a hook).
type request struct {
	ID, Tag, Via string
}

// mention is a Slack mention BobNet acknowledged (200 to a delivery).
type mention struct {
	Channel, TS, Tag string
}

// race is an approve and a cancel of one proposal sent at once.
type race struct {
	Proposal              string
	Approve, Cancel       int
	ApproveState, Outcome string
}

// ledger is what the clients saw; the checks compare it with what BobNet
// did.
type ledger struct {
	mu       sync.Mutex
	requests []request
	mentions []mention
	races    []race
	decided  map[string]string // proposal -> "approved" / "cancelled", as answered 200
	seq      atomic.Int64
}

func (l *ledger) tag(kind string) string {
	return fmt.Sprintf("soak-%s-%d", kind, l.seq.Add(1))
}

// workload is the clients: people talking to BobNet through the API,
// other tools through hooks, Slack through its Events API.
type workload struct {
	replicas      []*replica
	ledger        *ledger
	hookSecret    string
	slackSecret   string
	answerTimeout time.Duration
	// intake, when not nil, records each attempt to hand in a request
	// and whether it was taken.
	intake *intakeLog
}

// pickIntake is pick for handing in a request to channel: each attempt is
// recorded in w.intake, taken (2xx) or refused.
func (w *workload) pickIntake(ctx context.Context, channel string, f func(r *replica) int) int {
	return w.pick(ctx, func(r *replica) int {
		sent := time.Now()
		code := f(r)
		if ctx.Err() == nil { // not the end of the workload cutting it
			w.intake.record("request", channel, sent, code)
		}
		return code
	})
}

// pick calls f on random replicas until one answers (status != 0).
func (w *workload) pick(ctx context.Context, f func(r *replica) int) int {
	for try := 0; try < 20 && ctx.Err() == nil; try++ {
		r := w.replicas[rand.IntN(len(w.replicas))]
		if code := f(r); code != 0 && code != http.StatusServiceUnavailable {
			return code
		}
		time.Sleep(250 * time.Millisecond)
	}
	return 0
}

func (w *workload) run(ctx context.Context) {
	for ctx.Err() == nil {
		switch n := rand.IntN(100); {
		case n < 55:
			w.consoleRequest(ctx)
		case n < 80:
			w.hookDelivery(ctx)
		default:
			w.slackMention(ctx)
		}
	}
}

func (w *workload) consoleRequest(ctx context.Context) {
	tag := w.ledger.tag("c")
	channel := []string{"soak-a", "soak-b", "soak-q"}[rand.IntN(3)]
	var id string
	w.pickIntake(ctx, "console:"+channel, func(r *replica) int {
		code, out := r.call(ctx, "POST", "/api/v1/channels/"+channel+"/messages", map[string]string{"user": "carol", "text": "plan our daily research newspaper " + tag})
		if code == http.StatusAccepted {
			id, _ = out["request_id"].(string)
		}
		return code
	})
	if id == "" {
		return
	}
	w.ledger.mu.Lock()
	w.ledger.requests = append(w.ledger.requests, request{ID: id, Tag: tag, Via: "console"})
	w.ledger.mu.Unlock()
	if p := w.proposalOf(ctx, id); p != "" {
		w.decide(ctx, p, channel == "soak-q", tag)
	}
}

// hookDelivery sends one signed Standard Webhooks delivery, then the same
// delivery again one to three times, as senders retrying do.
func (w *workload) hookDelivery(ctx context.Context) {
	tag := w.ledger.tag("h")
	body := fmt.Appendf(nil, `{"type":"form.submitted","text":"Plan our daily research newspaper %s","user":"forms-bot"}`, tag)
	msgID := "msg_" + tag
	var id string
	for range 1 + rand.IntN(3) {
		w.pickIntake(ctx, "hook:forms", func(r *replica) int {
			h, _ := signing.StandardHeaders(w.hookSecret, msgID, time.Now(), body)
			h.Set("Content-Type", "application/json")
			code, out := postJSON(ctx, r, "/api/v1/hooks/forms", h, body)
			if code == http.StatusAccepted && id == "" {
				id, _ = out["request_id"].(string)
			}
			return code
		})
	}
	if id == "" {
		return
	}
	w.ledger.mu.Lock()
	w.ledger.requests = append(w.ledger.requests, request{ID: id, Tag: tag, Via: "hook"})
	w.ledger.mu.Unlock()
	if p := w.proposalOf(ctx, id); p != "" {
		w.decide(ctx, p, false, tag)
	}
}

// slackMention sends an app_mention signed as Slack does, retried as
// Slack retries (X-Slack-Retry-Num) one or two more times.
func (w *workload) slackMention(ctx context.Context) {
	tag := w.ledger.tag("s")
	n := w.ledger.seq.Load()
	ts := fmt.Sprintf("1800000000.%06d", n)
	body := fmt.Appendf(nil, `{"type":"event_callback","team_id":"T1","event_id":"Ev%s","event":{"type":"app_mention","user":"U_CAROL","text":"<@UBOT> plan our daily research newspaper %s","ts":%q,"channel":"C_SOAK"}}`, strconv.FormatInt(n, 10), tag, ts)
	acked := false
	for retry := range 1 + rand.IntN(3) {
		w.pickIntake(ctx, "slack:C_SOAK", func(r *replica) int {
			now := strconv.FormatInt(time.Now().Unix(), 10)
			h := http.Header{}
			h.Set("Content-Type", "application/json")
			h.Set("X-Slack-Request-Timestamp", now)
			h.Set("X-Slack-Signature", signing.SlackSignature(w.slackSecret, now, body))
			if retry > 0 {
				h.Set("X-Slack-Retry-Num", strconv.Itoa(retry))
				h.Set("X-Slack-Retry-Reason", "http_timeout")
			}
			code := r.post(ctx, "/slack/events", h, body)
			acked = acked || code == http.StatusOK
			return code
		})
	}
	if acked {
		w.ledger.mu.Lock()
		w.ledger.mentions = append(w.ledger.mentions, mention{Channel: "C_SOAK", TS: ts, Tag: tag})
		w.ledger.mu.Unlock()
	}
}

// proposalOf waits for a request's answer and returns its proposal ("" for
// an answer without one, or none in time: the checks count those).
func (w *workload) proposalOf(ctx context.Context, id string) string {
	deadline := time.Now().Add(w.answerTimeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		var st map[string]any
		w.pick(ctx, func(r *replica) int {
			code, out := r.call(ctx, "GET", "/api/v1/requests/"+id, nil)
			st = out
			return code
		})
		switch st["state"] {
		case "done":
			p, _ := st["proposal_id"].(string)
			return p
		case "failed":
			return ""
		}
		time.Sleep(300 * time.Millisecond)
	}
	return ""
}

// decide does what people do with a preview: approve, cancel, both at
// once on two replicas, two approvals at once, revise then approve, a
// quorum of two, or nothing.
func (w *workload) decide(ctx context.Context, p string, quorum bool, tag string) {
	approve := func(r *replica, user string) (int, map[string]any) {
		sent := time.Now()
		code, out := r.call(ctx, "POST", "/api/v1/proposals/"+p+"/approve", map[string]string{"user": user})
		if ctx.Err() == nil {
			w.intake.record("approval", p, sent, code)
		}
		return code, out
	}
	one := func() *replica { return w.replicas[rand.IntN(len(w.replicas))] }
	two := func() (*replica, *replica) {
		i := rand.IntN(len(w.replicas))
		return w.replicas[i], w.replicas[(i+1)%len(w.replicas)]
	}
	if quorum {
		for _, u := range []string{"alice", "bob"} {
			var code int
			var out map[string]any
			w.pick(ctx, func(r *replica) int { code, out = approve(r, u); return code })
			if code == http.StatusOK && out["board_id"] != nil {
				w.decided(p, "approved")
			}
		}
		w.moveCard(ctx, p)
		return
	}
	switch n := rand.IntN(100); {
	case n < 35:
		var code int
		w.pick(ctx, func(r *replica) int { code, _ = approve(r, "alice"); return code })
		if code == http.StatusOK {
			w.decided(p, "approved")
			w.moveCard(ctx, p)
		}
	case n < 50:
		var code int
		w.pick(ctx, func(r *replica) int {
			code, _ = r.call(ctx, "POST", "/api/v1/proposals/"+p+"/cancel", map[string]string{"user": "alice"})
			return code
		})
		if code == http.StatusOK {
			w.decided(p, "cancelled")
		}
	case n < 65:
		a, b := two()
		rc := race{Proposal: p}
		var wg sync.WaitGroup
		wg.Go(func() {
			var out map[string]any
			rc.Approve, out = approve(a, "alice")
			rc.ApproveState, _ = out["state"].(string)
		})
		wg.Go(func() {
			rc.Cancel, _ = b.call(ctx, "POST", "/api/v1/proposals/"+p+"/cancel", map[string]string{"user": "alice"})
		})
		wg.Wait()
		w.ledger.mu.Lock()
		w.ledger.races = append(w.ledger.races, rc)
		w.ledger.mu.Unlock()
		if rc.Approve == http.StatusOK {
			w.decided(p, "approved")
		}
		if rc.Cancel == http.StatusOK {
			w.decided(p, "cancelled")
		}
	case n < 75:
		a, b := two()
		var wg sync.WaitGroup
		for _, r := range []*replica{a, b} {
			wg.Go(func() {
				if code, _ := approve(r, "alice"); code == http.StatusOK {
					w.decided(p, "approved")
				}
			})
		}
		wg.Wait()
	case n < 90:
		var id string
		w.pick(ctx, func(r *replica) int {
			code, out := r.call(ctx, "POST", "/api/v1/proposals/"+p+"/revise", map[string]string{"user": "alice", "feedback": "add a fact checker " + tag + "-r"})
			if code == http.StatusAccepted {
				id, _ = out["request_id"].(string)
			}
			return code
		})
		if id == "" {
			return
		}
		w.ledger.mu.Lock()
		w.ledger.requests = append(w.ledger.requests, request{ID: id, Tag: tag, Via: "revise"})
		w.ledger.mu.Unlock()
		if p2 := w.proposalOf(ctx, id); p2 != "" && p2 != p {
			if code, _ := approve(one(), "alice"); code == http.StatusOK {
				// The old version, superseded: must be refused.
				w.decided(p, "approved")
			}
			var code int
			w.pick(ctx, func(r *replica) int {
				code, _ = r.call(ctx, "POST", "/api/v1/proposals/"+p2+"/approve", map[string]string{"user": "alice"})
				return code
			})
			if code == http.StatusOK {
				w.decided(p2, "approved")
			}
		}
	}
}

// decided notes a 200 answer to a decision; two different ones for one
// proposal is a proposal both approved and cancelled.
func (w *workload) decided(p, what string) {
	w.ledger.mu.Lock()
	defer w.ledger.mu.Unlock()
	if prev, ok := w.ledger.decided[p]; ok && prev != what {
		w.ledger.decided[p] = "both"
		return
	}
	w.ledger.decided[p] = what
}

// moveCard starts the first card of the proposal's board, as people do
// once a board exists.
func (w *workload) moveCard(ctx context.Context, p string) {
	var board string
	w.pick(ctx, func(r *replica) int {
		code, out := r.call(ctx, "GET", "/api/v1/proposals/"+p, nil)
		board, _ = out["board_id"].(string)
		return code
	})
	if board == "" {
		return
	}
	w.pick(ctx, func(r *replica) int {
		code, _ := r.call(ctx, "PATCH", "/api/v1/cards/"+firstHandle(ctx, r, board), map[string]any{"user": "alice", "status": "In Progress"})
		return code
	})
}

func firstHandle(ctx context.Context, r *replica, board string) string {
	_, out := r.call(ctx, "GET", "/api/v1/boards/"+board, nil)
	cards, _ := out["cards"].([]any)
	for _, c := range cards {
		m, _ := c.(map[string]any)
		if m["status"] == "Ready" {
			if id, ok := m["id"].(string); ok {
				return id
			}
		}
	}
	return "none"
}
