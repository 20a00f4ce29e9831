package slack

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/signing"
)

// inertEngine takes requests and refuses every decision, as for an
// unknown proposal: the fuzz targets exercise decoding, not the engine.
type inertEngine struct{}

func (inertEngine) Submit(context.Context, board.Request) (board.RequestID, error) { return "r_1", nil }
func (inertEngine) Approve(context.Context, board.ProposalID, string) (board.Approval, error) {
	return board.Approval{}, bot.ErrNotFound
}
func (inertEngine) CancelWithReason(context.Context, board.ProposalID, string, string) (board.Proposal, error) {
	return board.Proposal{}, bot.ErrNotFound
}
func (inertEngine) Revise(context.Context, board.ProposalID, string, string) (board.RequestID, error) {
	return "", bot.ErrNotFound
}
func (inertEngine) ProposeAgain(context.Context, board.ProposalID, string) (board.RequestID, error) {
	return "", bot.ErrNotFound
}
func (inertEngine) Authorize(context.Context, board.ProposalID, string) (board.Proposal, error) {
	return board.Proposal{}, bot.ErrNotFound
}
func (inertEngine) Request(context.Context, board.RequestID) (board.RequestStatus, error) {
	return board.RequestStatus{}, bot.ErrNotFound
}
func (inertEngine) Proposal(context.Context, board.ProposalID) (board.Proposal, error) {
	return board.Proposal{}, bot.ErrNotFound
}
func (inertEngine) ChannelStatus(context.Context, board.Channel) (board.Status, error) {
	return board.Status{}, bot.ErrNotFound
}
func (inertEngine) BoardStatusIn(context.Context, board.Channel, board.ID) (board.Status, error) {
	return board.Status{}, bot.ErrNotFound
}

func (inertEngine) MoveCard(context.Context, board.Channel, string, string, string) (board.CardUpdate, error) {
	return board.CardUpdate{}, bot.ErrNotFound
}
func (inertEngine) AssignCard(context.Context, board.Channel, string, string, string) (board.CardUpdate, error) {
	return board.CardUpdate{}, bot.ErrNotFound
}
func (inertEngine) StartRun(context.Context, board.Channel, string, string) (board.Run, error) {
	return board.Run{}, bot.ErrNotFound
}

func (inertEngine) RecentRuns(context.Context, board.Channel, string) (board.Board, []board.Run, error) {
	return board.Board{}, nil, bot.ErrNotFound
}

func (inertEngine) ReviewByHandle(context.Context, board.Channel, string, string, bool, string) (board.CardUpdate, error) {
	return board.CardUpdate{}, bot.ErrNotFound
}

func (inertEngine) Schedule(context.Context, board.Channel, string, bot.ScheduleCommand) (string, error) {
	return "", bot.ErrNotFound
}

func (inertEngine) RunsLine(context.Context, board.Board) string { return "" }

func (inertEngine) NextCards(context.Context, board.Channel) (board.Status, error) {
	return board.Status{}, bot.ErrNotFound
}

func (inertEngine) Withdraw(context.Context, board.ProposalID, string) (board.Proposal, error) {
	return board.Proposal{}, bot.ErrNotFound
}

func (inertEngine) PolicyFor(context.Context, board.Channel) (board.PolicyInForce, error) {
	return board.PolicyInForce{}, bot.ErrUnavailable
}

func (inertEngine) BudgetStatus(context.Context, board.Channel) (bot.Budget, error) {
	return bot.Budget{}, bot.ErrUnavailable
}

func (inertEngine) WaitingFor(context.Context, string, []board.Channel) ([]board.Proposal, error) {
	return nil, bot.ErrUnavailable
}

func (inertEngine) MayApprove(context.Context, board.Proposal, string) bool { return false }

func (inertEngine) CardsAssignedTo(context.Context, string, int) ([]board.AssignedCard, error) {
	return nil, bot.ErrUnavailable
}

func (inertEngine) MoveAssignedCard(context.Context, string, string, board.CardID, string, string) (board.CardUpdate, error) {
	return board.CardUpdate{}, bot.ErrNotFound
}

// marks is Memory in a map.
type marks struct {
	mu sync.Mutex
	m  map[string]bool
}

func (m *marks) SeenOnce(_ context.Context, key string, _ time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	first := !m.m[key]
	m.m[key] = true
	return first, nil
}
func (m *marks) Mark(ctx context.Context, key string, ttl time.Duration) error {
	_, err := m.SeenOnce(ctx, key, ttl)
	return err
}

// AddHomeViewer forgets: nobody's App Home is refreshed.
func (m *marks) AddHomeViewer(context.Context, string, string, time.Time) error { return nil }

// HomeViewers lists nobody.
func (m *marks) HomeViewers(context.Context, string, time.Time, int) ([]string, error) {
	return nil, nil
}

// The showing of a request is never kept: Slack is unreachable here.
func (m *marks) ShowingSet(context.Context, board.RequestID, map[string]string, time.Duration) error {
	return nil
}
func (m *marks) ShowingClaim(context.Context, board.RequestID, string, string, map[string]string, time.Duration) (bool, map[string]string, error) {
	return false, nil, nil
}
func (m *marks) Showing(context.Context, board.RequestID) (map[string]string, error) { return nil, nil }
func (m *marks) HoldStream(context.Context, board.Thread, board.RequestID, time.Duration) (bool, error) {
	return false, nil
}
func (m *marks) ReleaseStream(context.Context, board.Thread, board.RequestID) error { return nil }
func (m *marks) AddDue(context.Context, string, string, time.Time) error            { return nil }
func (m *marks) DropDue(context.Context, string, string) error                      { return nil }
func (m *marks) TakeDue(context.Context, string, time.Time, int, time.Duration) ([]string, error) {
	return nil, nil
}

func (m *marks) Marked(_ context.Context, key string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.m[key], nil
}

// fuzzRouter is the three signed endpoints with nothing real behind them;
// the Web API points nowhere.
func fuzzRouter(t testing.TB) http.Handler {
	a, err := New(context.Background(), Config{BotToken: "xoxb-fuzz", SigningSecret: "fuzz-secret", APIURL: "http://127.0.0.1:1/api/", Timeout: 50 * time.Millisecond},
		inertEngine{}, &marks{m: map[string]bool{}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Wait(context.Background()) })
	r := chi.NewRouter()
	a.Routes(r)
	return r
}

// signedRequest is body POSTed to path, correctly signed.
func signedRequest(path, contentType string, body []byte) *http.Request {
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	req := httptest.NewRequest("POST", path, strings.NewReader(string(body)))
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", signing.SlackSignature("fuzz-secret", ts, body))
	return req
}

// FuzzEvents feeds signed Events API bodies of any shape: the decoder never
// panics and answers 200 (taken or ignored), 400 (not JSON) or 413.
func FuzzEvents(f *testing.F) {
	for _, seed := range []string{
		`{"type":"url_verification","challenge":"abc"}`,
		`{"type":"event_callback","event_id":"Ev1","event":{"type":"app_mention","user":"U1","text":"<@U2> plan it","ts":"1.1","channel":"C1"}}`,
		`{"type":"event_callback","event_id":"Ev2","event":{"type":"message","user":"U1","text":"hi","ts":"1.2","thread_ts":"1.1","channel":"C1"}}`,
		`{"type":"event_callback","event":{"type":"app_mention","user":"U1","text":"","channel":"C1","bot_id":"B1"}}`,
		`{"type":"event_callback","event":{"type":"app_mention","user":"U1","text":"<@U2>","channel":"C1"}}`,
		`{"event":null}`, `[]`, `"x"`, `{"type":"event_callback","event":{"text":{"nested":[1,2,3]}}}`, "",
	} {
		f.Add([]byte(seed))
	}
	h := fuzzRouter(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, signedRequest("/slack/events", "application/json", body))
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q", rec.Code, body)
		}
	})
}

// FuzzInteractivity feeds signed interactivity forms whose payload is any
// text: block actions, view submissions and garbage alike never panic.
func FuzzInteractivity(f *testing.F) {
	for _, seed := range []string{
		`{"type":"block_actions","user":{"id":"U1"},"channel":{"id":"C1"},"message":{"ts":"1.1"},"actions":[{"action_id":"bobnet_approve","value":"p_x"}]}`,
		`{"type":"block_actions","user":{"id":"U1"},"actions":[{"action_id":"bobnet_revise","value":"p_x"}],"trigger_id":"T1"}`,
		`{"type":"view_submission","user":{"id":"U1"},"view":{"callback_id":"bobnet_revise","private_metadata":"{\"p\":\"p_x\"}","state":{"values":{"feedback":{"feedback_input":{"value":"more"}}}}}}`,
		`{"type":"view_submission","view":{"callback_id":"bobnet_revise","private_metadata":"not json"}}`,
		`{"type":"shortcut"}`, `{}`, `null`, "",
	} {
		f.Add(seed)
	}
	h := fuzzRouter(f)
	f.Fuzz(func(t *testing.T, payload string) {
		rec := httptest.NewRecorder()
		body := []byte("payload=" + url.QueryEscape(payload))
		h.ServeHTTP(rec, signedRequest("/slack/interactivity", "application/x-www-form-urlencoded", body))
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q", rec.Code, payload)
		}
	})
}
