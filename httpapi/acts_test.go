package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpapi"
)

// actsEngine records who every action was taken as.
type actsEngine struct {
	mu   sync.Mutex
	acts []string
}

func (e *actsEngine) Command(context.Context, bot.Command) bot.CommandAnswer {
	e.act("command", "")
	return bot.CommandAnswer{Help: true}
}

func (e *actsEngine) act(what, user string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.acts = append(e.acts, what+" as "+user)
}

func (e *actsEngine) taken() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := e.acts
	e.acts = nil
	return out
}

func (e *actsEngine) Submit(_ context.Context, r board.Request) (board.RequestID, error) {
	e.act("message", r.User)
	return r.ID, nil
}

func (e *actsEngine) Request(context.Context, board.RequestID) (board.RequestStatus, error) {
	return board.RequestStatus{}, bot.ErrNotFound
}

func (e *actsEngine) Proposal(_ context.Context, id board.ProposalID) (board.Proposal, error) {
	return board.Proposal{ID: id, State: board.ProposalPending, RequestedBy: "alice"}, nil
}

func (e *actsEngine) Approve(_ context.Context, id board.ProposalID, user string) (board.Approval, error) {
	e.act("approve", user)
	return board.Approval{ProposalID: id, BoardID: "b_1"}, nil
}

func (e *actsEngine) CancelWithReason(_ context.Context, id board.ProposalID, user, _ string) (board.Proposal, error) {
	e.act("cancel", user)
	return board.Proposal{ID: id, State: board.ProposalCancelled}, nil
}

func (e *actsEngine) Revise(_ context.Context, _ board.ProposalID, user, _ string) (board.RequestID, error) {
	e.act("revise", user)
	return "r_twoaaaaaaaaaaaaa", nil
}

func (e *actsEngine) ProposeAgain(_ context.Context, _ board.ProposalID, user string) (board.RequestID, error) {
	e.act("propose-again", user)
	return "r_threeaaaaaaaaaaa", nil
}

func (e *actsEngine) Withdraw(_ context.Context, id board.ProposalID, user string) (board.Proposal, error) {
	e.act("withdraw", user)
	return board.Proposal{ID: id, State: board.ProposalPending}, nil
}

func (e *actsEngine) EditCard(_ context.Context, ed bot.CardEdit) (board.CardUpdate, error) {
	e.act("edit card", ed.User)
	return board.CardUpdate{Card: board.Card{ID: ed.ID}}, nil
}

// boundTokens knows one token bound to alice and one bound to nobody,
// both with every scope.
type boundTokens struct{}

func (boundTokens) Lookup(_ context.Context, secret string) (apitoken.Token, error) {
	switch secret {
	case "alice-secret":
		return apitoken.Token{Name: "alice-bot", Scopes: apitoken.Scopes, User: "alice"}, nil
	case "any-secret":
		return apitoken.Token{Name: "any-bot", Scopes: apitoken.Scopes}, nil
	}
	return apitoken.Token{}, apitoken.ErrNotFound
}

// A token bound to alice acts as alice and nobody else, however the body
// is built: a stray brace or a second value after the object, a key given
// twice (or in another case, which encoding/json takes for the same
// field). Such bodies are refused before anything happens, with any token,
// since two readers of them could disagree on who is acting.
func TestBoundTokenActsOnlyAsItsUser(t *testing.T) {
	t.Parallel()
	eng := &actsEngine{}
	_, chat := newChat(eng)
	r := chi.NewRouter()
	r.Group(func(r chi.Router) {
		r.Use(apitoken.NewGuard(boundTokens{}, "boot", discard()).Middleware)
		chat.Routes(r)
		httpapi.NewCards(eng, noCards{}, discard()).Routes(r)
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)

	const p = "/api/v1/proposals/p_okaaaaaaaaaaaaaa/"
	routes := []struct {
		method, path, what, rest string
	}{
		{"POST", "/api/v1/channels/general/messages", "message", `"text":"plan a launch"`},
		{"POST", p + "approve", "approve", ""},
		{"POST", p + "cancel", "cancel", ""},
		{"POST", p + "revise", "revise", `"feedback":"fewer cards"`},
		{"POST", p + "propose-again", "propose-again", ""},
		{"POST", p + "withdraw", "withdraw", ""},
		{"PATCH", "/api/v1/cards/" + okCard, "edit card", `"title":"New title"`},
	}
	send := func(t *testing.T, method, path, token, body string) (int, string) {
		t.Helper()
		return bearerCall(t, srv.URL, token, method, path, body)
	}
	for _, rt := range routes {
		t.Run(rt.what, func(t *testing.T) {
			obj := func(fields ...string) string {
				if rt.rest != "" {
					fields = append(fields, rt.rest)
				}
				return "{" + strings.Join(fields, ",") + "}"
			}
			refused := []struct {
				name, token, body string
				want              int
				says              string
			}{
				{"as another user", "alice-secret", obj(`"user":"bob"`), 403, `acts only for user \"alice\"`},
				{"stray brace", "alice-secret", obj(`"user":"bob"`) + "}", 400, "follows the JSON value"},
				{"second value", "alice-secret", obj(`"user":"bob"`) + " " + obj(`"user":"alice"`), 400, "follows the JSON value"},
				{"second value, same user", "alice-secret", obj(`"user":"alice"`) + obj(`"user":"alice"`), 400, "follows the JSON value"},
				{"duplicate key", "alice-secret", obj(`"user":"alice"`, `"user":"bob"`), 400, "appears twice"},
				{"duplicate key, escaped", "alice-secret", obj(`"user":"alice"`, `"\u0075ser":"bob"`), 400, "appears twice"},
				{"duplicate key, other case", "alice-secret", obj(`"user":"alice"`, `"User":"bob"`), 400, "appears twice"},
				{"duplicate key, folded", "alice-secret", obj(`"user":"alice"`, `"uſer":"bob"`), 400, "appears twice"},
				{"not JSON", "alice-secret", `{"user":"bob"`, 400, "invalid JSON body"},
				{"stray brace, unbound token", "any-secret", obj(`"user":"bob"`) + "}", 400, "follows the JSON value"},
				{"duplicate key, unbound token", "any-secret", obj(`"user":"alice"`, `"user":"bob"`), 400, "appears twice"},
			}
			for _, tc := range refused {
				status, body := send(t, rt.method, rt.path, tc.token, tc.body)
				if status != tc.want || !strings.Contains(body, tc.says) {
					t.Errorf("%s: %s: %d %s, want %d saying %s", tc.name, tc.body, status, strings.TrimSpace(body), tc.want, tc.says)
				}
				if acts := eng.taken(); len(acts) > 0 {
					t.Errorf("%s: %s: the engine acted: %v", tc.name, tc.body, acts)
				}
			}
			// What is allowed still works, trailing whitespace included.
			for _, ok := range []struct{ token, user string }{{"alice-secret", "alice"}, {"any-secret", "bob"}} {
				status, body := send(t, rt.method, rt.path, ok.token, obj(`"user":"`+ok.user+`"`)+" \r\n\t")
				acts := eng.taken()
				if status >= 300 || len(acts) != 1 || acts[0] != rt.what+" as "+ok.user {
					t.Errorf("%s as %s: %d %s, acts %v", ok.token, ok.user, status, strings.TrimSpace(body), acts)
				}
			}
		})
	}
}

// Chat text gets the check plans and cards get: a NUL or another control
// character is a 400 naming it, before the engine sees the message.
func TestMessagesArePlainText(t *testing.T) {
	t.Parallel()
	eng := &actsEngine{}
	_, chat := newChat(eng)
	r := chi.NewRouter()
	chat.Routes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ path, body, says string }{
		{"/api/v1/channels/general/messages", `{"user":"bob","text":"plan\u0000 a launch"}`, `"text" contains the control character U+0000 (NUL)`},
		{"/api/v1/channels/general/messages", `{"user":"bob","text":"plan \u001b[2J a launch"}`, "U+001B"},
		{"/api/v1/proposals/p_okaaaaaaaaaaaaaa/revise", `{"user":"bob","feedback":"fewer\u0000 cards"}`, `"feedback" contains the control character U+0000 (NUL)`},
	} {
		resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 400 || !strings.Contains(string(b), strings.ReplaceAll(tc.says, `"`, `\"`)) {
			t.Errorf("%s: %d %s, want 400 saying %s", tc.body, resp.StatusCode, b, tc.says)
		}
		if acts := eng.taken(); len(acts) > 0 {
			t.Errorf("%s: the engine acted: %v", tc.body, acts)
		}
	}
}
