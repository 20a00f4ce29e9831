package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/signing"
)

// tagRE finds the soak's tag for a request in the text the model reads:
// each request's text carries one, so model calls can be counted per
// request.
var tagRE = regexp.MustCompile(`soak-[a-z]+-[0-9]+`)

// model is the scripted model server: sometimes slower than the reclaim
// time, sometimes failing, sometimes answering with something that is not
// a plan.
type model struct {
	srv *plannertest.Server

	mu       sync.Mutex
	calls    map[string]int // tag -> calls
	runner   []runnerCall
	inflight map[string]time.Time // replica -> until when its runner waits on a slow answer

	killedMidCard atomic.Int64 // SIGKILLs of a replica whose runner was working a card
}

// runnerCall is one call of a model runner: the card it worked (its
// handle), the round (the soak's reviewers write round=N in every
// reason), when, and whether it was answered 500 (which the model client
// retries within the same attempt).
type runnerCall struct {
	Handle  string
	Replica string
	Round   int
	At      time.Time
	Failed  bool
}

var (
	runnerCardRE  = regexp.MustCompile(`(?m)^Card ([A-Z0-9]+-[0-9]+)\.`)
	runnerRoundRE = regexp.MustCompile(`round=([0-9]+)`)
)

func newModel(t *testing.T, slow time.Duration) *model {
	m := &model{srv: plannertest.NewServer(t), calls: map[string]int{}, inflight: map[string]time.Time{}}
	plan := plannertest.NewspaperPlan(t)
	m.srv.Handle(func(req openai.ChatCompletionRequest) plannertest.Reply {
		if msg := plannertest.LastUserMessage(req); strings.Contains(msg, "Answer with the output of") {
			return m.work(strings.TrimPrefix(req.Model, "soak-model-"), msg, slow)
		}
		tag := tagRE.FindString(plannertest.LastUserMessage(req))
		m.mu.Lock()
		m.calls[tag]++
		m.mu.Unlock()
		switch n := rand.IntN(100); {
		case n < 12:
			return plannertest.Reply{Content: plan, Delay: slow}
		case n < 18:
			return plannertest.Reply{Status: http.StatusInternalServerError, Message: "the model server is overloaded"}
		case n < 22:
			return plannertest.Reply{Content: `{"kind":"propose_actions","actions":[{"type":"create_board_with_cards"`}
		}
		return plannertest.Reply{Content: plan}
	})
	return m
}

// work answers a model runner: mostly at once, sometimes slower than the
// lease (the runner renews it), sometimes failing (the card is tried
// again).
func (m *model) work(replica, msg string, slow time.Duration) plannertest.Reply {
	c := runnerCall{At: time.Now(), Replica: replica}
	if sm := runnerCardRE.FindStringSubmatch(msg); sm != nil {
		c.Handle = sm[1]
	}
	if sm := runnerRoundRE.FindAllStringSubmatch(msg, -1); sm != nil {
		c.Round, _ = strconv.Atoi(sm[len(sm)-1][1])
	}
	r := rand.IntN(100)
	c.Failed = r < 4
	m.mu.Lock()
	m.runner = append(m.runner, c)
	n := len(m.runner)
	m.mu.Unlock()
	switch {
	case c.Failed:
		return plannertest.Reply{Status: http.StatusInternalServerError, Message: "the model server is overloaded"}
	case r < 10:
		m.mu.Lock()
		m.inflight[replica] = time.Now().Add(slow)
		m.mu.Unlock()
		return plannertest.Reply{Content: fmt.Sprintf("## %s\n\nSlow output, call %d.", c.Handle, n), Delay: slow}
	}
	return plannertest.Reply{Content: fmt.Sprintf("## %s\n\nOutput, call %d.", c.Handle, n)}
}

// working returns a replica whose model runner waits on a slow answer,
// waiting up to wait for one; nil when none did.
func (m *model) working(replicas []*replica, wait time.Duration) *replica {
	deadline := time.Now().Add(wait)
	for {
		m.mu.Lock()
		for _, r := range replicas {
			if until, ok := m.inflight[r.name]; ok && time.Until(until) > time.Second && !r.exited() {
				m.mu.Unlock()
				return r
			}
		}
		m.mu.Unlock()
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (m *model) runnerCalls() []runnerCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]runnerCall(nil), m.runner...)
}

func (m *model) callsFor(tag string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[tag]
}

// slackMessage is one message Slack holds, as last drawn: posted
// (chat.postMessage) or streamed (chat.startStream), then perhaps
// redrawn (chat.update, chat.stopStream) or deleted (chat.delete), as
// the thread status's placeholder and a streamed draft become their
// answer.
type slackMessage struct {
	Channel, ThreadTS, Text, TS string
	Proposal                    string // the proposal a preview's Approve button names
	Review                      string // "run card round" of a Review announcement's Accept button
	Metadata                    string // as posted (JSON)
	deleted                     bool
}

// draw takes a post's or redraw's text (a stream's is its markdown) and
// metadata, where it has them, and the proposal or review its buttons
// name: a redraw that takes the buttons away (decided) leaves the message
// the preview it was.
func (m *slackMessage) draw(form url.Values) {
	if t := form.Get("text"); t != "" {
		m.Text = t
	}
	var chunks []struct{ Type, Text string }
	_ = json.Unmarshal([]byte(form.Get("chunks")), &chunks)
	for _, c := range chunks {
		if c.Type == "markdown_text" {
			m.Text += c.Text
		}
	}
	if p := buttonValue(form.Get("blocks"), "bobnet_approve"); p != "" {
		m.Proposal = p
	}
	if r := buttonValue(form.Get("blocks"), "bobnet_review_accept"); r != "" {
		m.Review = r
	}
	if md := form.Get("metadata"); md != "" {
		m.Metadata = md
	}
}

// slackAPI stands in for Slack's Web API: it answers in Slack's format,
// sometimes slowly and sometimes with a 500, and keeps the messages it
// accepted.
type slackAPI struct {
	srv *httptest.Server

	mu   sync.Mutex
	sent []slackMessage
	ts   int
}

func newSlackAPI(t *testing.T, slow time.Duration) *slackAPI {
	s := &slackAPI{}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		switch n := rand.IntN(100); {
		case n < 8:
			time.Sleep(slow)
		case n < 12:
			http.Error(w, "slack is having a moment", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		s.mu.Lock()
		defer s.mu.Unlock()
		s.ts++
		ts := "1700000000." + padTS(s.ts)
		switch r.URL.Path {
		case "/api/chat.postMessage", "/api/chat.startStream":
			m := slackMessage{Channel: r.PostForm.Get("channel"), ThreadTS: r.PostForm.Get("thread_ts"), TS: ts}
			m.draw(r.PostForm)
			s.sent = append(s.sent, m)
		case "/api/chat.update", "/api/chat.appendStream", "/api/chat.stopStream", "/api/chat.delete":
			for i := range s.sent {
				if s.sent[i].TS == r.PostForm.Get("ts") && s.sent[i].Channel == r.PostForm.Get("channel") {
					s.sent[i].draw(r.PostForm)
					s.sent[i].deleted = r.URL.Path == "/api/chat.delete"
				}
			}
		case "/api/conversations.replies":
			var msgs []map[string]any
			for _, m := range s.sent {
				if m.ThreadTS != r.PostForm.Get("ts") || m.deleted {
					continue
				}
				out := map[string]any{"type": "message", "ts": m.TS, "text": m.Text, "thread_ts": m.ThreadTS, "bot_id": "BBOT"}
				if m.Metadata != "" && r.PostForm.Get("include_all_metadata") == "1" {
					var md map[string]any
					_ = json.Unmarshal([]byte(m.Metadata), &md)
					out["metadata"] = md
				}
				msgs = append(msgs, out)
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "messages": msgs, "has_more": false})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "channel": r.PostForm.Get("channel"), "ts": ts,
			"user_id": "UBOT", "user": "UBOT", "bot_id": "BBOT", "team_id": "T1"})
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func padTS(n int) string {
	s := "000000" + itoa(n)
	return s[len(s)-6:]
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// buttonValue is the value of the button action in a Block Kit blocks
// array (a preview's Approve names its proposal), or "".
func buttonValue(blocks, action string) string {
	if blocks == "" {
		return ""
	}
	var v any
	if json.Unmarshal([]byte(blocks), &v) != nil {
		return ""
	}
	var find func(any) string
	find = func(v any) string {
		switch x := v.(type) {
		case map[string]any:
			if x["action_id"] == action {
				s, _ := x["value"].(string)
				return s
			}
			for _, e := range x {
				if s := find(e); s != "" {
					return s
				}
			}
		case []any:
			for _, e := range x {
				if s := find(e); s != "" {
					return s
				}
			}
		}
		return ""
	}
	return find(v)
}

// messages are the messages Slack holds (not deleted), as last drawn.
func (s *slackAPI) messages() []slackMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []slackMessage
	for _, m := range s.sent {
		if !m.deleted {
			out = append(out, m)
		}
	}
	return out
}

// callback is one event delivery the receiver accepted.
type callback struct {
	ID, Type, Proposal string
}

// receiver is another tool hearing BobNet's events: it verifies each with
// the Standard Webhooks algorithm, is sometimes down, and keeps what it
// accepted in order.
type receiver struct {
	srv *httptest.Server

	mu         sync.Mutex
	got        []callback
	bad        int
	dispatches map[string]dispatch // webhook-id -> the card it dispatched
	outputs    []hookOutput
	bases      []string // the replicas' URLs, to post outputs to
}

// dispatch is a card.dispatched the receiver accepted: a hook runner's
// card to work.
type dispatch struct {
	Run, Card string
	Round     int
}

// hookOutput is one output the hook runner posted back and the answer.
type hookOutput struct {
	Run, Card string
	Round     int
	Status    int
}

func newReceiver(t *testing.T, secret string) *receiver {
	rc := &receiver{dispatches: map[string]dispatch{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if signing.VerifyStandard(r.Header, secret, body, time.Now()) != nil {
			rc.mu.Lock()
			rc.bad++
			rc.mu.Unlock()
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if rand.IntN(100) < 10 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var p struct {
			Type string `json:"type"`
			Data struct {
				ProposalID string `json:"proposal_id"`
				Card       struct {
					ID string `json:"id"`
				} `json:"card"`
				Run struct {
					ID string `json:"id"`
				} `json:"run"`
				Feedback string `json:"feedback"`
				Callback struct {
					URL   string `json:"url"`
					Token string `json:"token"`
				} `json:"callback"`
			} `json:"data"`
		}
		_ = json.Unmarshal(body, &p)
		id := r.Header.Get("webhook-id")
		rc.mu.Lock()
		rc.got = append(rc.got, callback{ID: id, Type: p.Type, Proposal: p.Data.ProposalID})
		_, again := rc.dispatches[id]
		var d dispatch
		if p.Type == "card.dispatched" && !again {
			d = dispatch{Run: p.Data.Run.ID, Card: p.Data.Card.ID}
			if sm := runnerRoundRE.FindStringSubmatch(p.Data.Feedback); sm != nil {
				d.Round, _ = strconv.Atoi(sm[1])
			}
			rc.dispatches[id] = d
		}
		rc.mu.Unlock()
		if p.Type == "card.dispatched" && !again {
			go rc.work(d, p.Data.Callback.URL, p.Data.Callback.Token)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) deliveries() ([]callback, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]callback(nil), rc.got...), rc.bad
}
