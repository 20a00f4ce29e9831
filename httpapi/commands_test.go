package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// nextSurface answers NextCards with one board; any other lookup panics
// (the embedded Surface is nil): the commands tested ask nothing else.
type nextSurface struct{ bot.Surface }

func (nextSurface) NextCards(context.Context, board.Channel) (board.Status, error) {
	return board.Status{Board: board.Board{ID: "b_1", Name: "News", Key: "NEWS"},
		Ready: []board.Card{{ID: "c_1", Handle: "NEWS-1", Title: "Find sources", Status: "Ready"}}}, nil
}

// say posts text to the console channel "general" and returns the
// status, the body and the channel's events since.
func say(t *testing.T, srv, text string) (int, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"user": "alice", "text": text})
	resp, err := http.Post(srv+"/api/v1/channels/general/messages", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return resp.StatusCode, out
}

// TestConsoleCommands: a console message starting with "/bobnet " is a
// chat command of bot's grammar, answered at once in the channel's
// stream and never submitted; "/bobnet plan" is a request.
func TestConsoleCommands(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{surface: nextSurface{}}
	con, srv := newServer(t, eng)

	status, out := say(t, srv.URL, "/bobnet move")
	reply, _ := out["reply"].(map[string]any)
	want := "Say which card and where to: /bobnet move NEWS-3 in progress. Statuses: " + strings.Join(board.Statuses, ", ") + "."
	if status != http.StatusOK || reply["text"] != want || reply["kind"] != "info" {
		t.Fatalf("move without args: %d %v", status, out)
	}
	status, out = say(t, srv.URL, "/bobnet next")
	reply, _ = out["reply"].(map[string]any)
	if status != http.StatusOK || !strings.Contains(reply["text"].(string), "NEWS-1") || reply["board_url"] != "/boards/b_1" {
		t.Fatalf("next: %d %v", status, out)
	}
	status, out = say(t, srv.URL, "/bobnet help")
	help, _ := out["reply"].(map[string]any)["text"].(string)
	if status != http.StatusOK {
		t.Fatalf("help: %d %v", status, out)
	}
	for _, v := range bot.Verbs {
		if listed := strings.Contains(help, "• /bobnet "+v.Name) || strings.Contains(help, "• !"+v.Name); listed == v.MatrixOnly {
			t.Errorf("console help lists %q: %v, want %v:\n%s", v.Name, listed, !v.MatrixOnly, help)
		}
	}
	// "/bobnet leave" is Matrix's: the console answers with help.
	if _, out = say(t, srv.URL, "/bobnet leave"); out["reply"].(map[string]any)["text"] != help {
		t.Errorf("leave: %v", out)
	}
	eng.mu.Lock()
	submits := len(eng.submits)
	eng.mu.Unlock()
	if submits != 0 {
		t.Fatalf("a command was submitted as a request: %d", submits)
	}

	// A plan is a request; "/bobnetx" is no command.
	if status, out = say(t, srv.URL, "/bobnet plan our launch"); status != http.StatusAccepted {
		t.Fatalf("plan: %d %v", status, out)
	}
	if status, out = say(t, srv.URL, "/bobnetx hello"); status != http.StatusAccepted {
		t.Fatalf("/bobnetx: %d %v", status, out)
	}
	eng.mu.Lock()
	got := eng.submits
	eng.mu.Unlock()
	if len(got) != 2 || got[0].Text != "our launch" || got[1].Text != "/bobnetx hello" {
		t.Fatalf("submitted %+v", got)
	}

	// Each command and its answer are in the channel's stream.
	past, _, stop := con.Follow("general", 0)
	stop()
	var replies []string
	for _, ev := range past {
		if ev.Type == "reply" {
			replies = append(replies, ev.Data.(board.Reply).Text)
		}
	}
	if len(replies) != 4 || replies[0] != want {
		t.Fatalf("replies in the channel: %q", replies)
	}
}

// TestConsoleDispatchesEveryVerb: every verb of the table the console has
// reaches the engine's grammar as that verb.
func TestConsoleDispatchesEveryVerb(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{}
	_, srv := newServer(t, eng)
	for _, v := range bot.Verbs {
		if v.MatrixOnly {
			continue
		}
		status, out := say(t, srv.URL, "/bobnet "+strings.ToUpper(v.Name)+" NEWS-3")
		if reply, _ := out["reply"].(map[string]any); status != http.StatusOK || reply["text"] != "answered "+v.Name {
			t.Errorf("/bobnet %s: %d %v", v.Name, status, out)
		}
	}
}

// scopedTokens knows tokens with one scope each beside propose, which
// posting a message needs: "read-secret" and "propose-secret" (none).
type scopedTokens struct{}

func (scopedTokens) Lookup(_ context.Context, secret string) (apitoken.Token, error) {
	switch secret {
	case "read-secret":
		return apitoken.Token{Name: "reader", Scopes: []apitoken.Scope{apitoken.ScopePropose, apitoken.ScopeRead}}, nil
	case "propose-secret":
		return apitoken.Token{Name: "proposer", Scopes: []apitoken.Scope{apitoken.ScopePropose}}, nil
	case "limited-secret":
		return apitoken.Token{Name: "limited", Scopes: apitoken.Scopes, Channels: []string{"console:general"}}, nil
	}
	return apitoken.Token{}, apitoken.ErrNotFound
}

// TestConsoleCommandScopes: a console command needs the scope of the API
// route that does the same (status: read; move, run, schedule: write;
// accept: approve); without it the answer is a 403 and nothing is done
// or shown. Help needs nothing more than posting a message.
func TestConsoleCommandScopes(t *testing.T) {
	t.Parallel()
	eng := &fakeEngine{surface: nextSurface{}}
	con, chat := newChat(eng)
	r := chi.NewRouter()
	r.Group(func(r chi.Router) {
		r.Use(apitoken.NewGuard(scopedTokens{}, "boot", discard()).Middleware)
		chat.Routes(r)
	})
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	send := func(token, text string) (int, string) {
		body, _ := json.Marshal(map[string]string{"user": "alice", "text": text})
		return bearerCall(t, srv.URL, token, "POST", "/api/v1/channels/general/messages", string(body))
	}
	for _, tc := range []struct {
		token, text string
		status      int
		says        string
	}{
		{"read-secret", "/bobnet move NEWS-3 done", 403, "/bobnet move needs a token with the write scope; nothing was done"},
		{"read-secret", "/bobnet run NEWS", 403, "write scope"},
		{"read-secret", "/bobnet schedule NEWS off", 403, "write scope"},
		{"read-secret", "/bobnet accept NEWS-3", 403, "approve scope"},
		{"propose-secret", "/bobnet next", 403, "/bobnet next needs a token with the read scope"},
		{"propose-secret", "/bobnet help", 200, "/bobnet status"},
		{"read-secret", "/bobnet next", 200, "NEWS-1"},
		// A token limited to channels names nothing beyond its channel's
		// board: the grammar would look it up among every console
		// channel's boards.
		{"limited-secret", "/bobnet move NEWS-3 done", 403, "a token limited to channels cannot name a board or card in /bobnet move"},
		{"limited-secret", "/bobnet status b_aaaaaaaaaaaaaaaaaaaaaaaaaa", 403, "cannot name a board or card in /bobnet status"},
		{"limited-secret", "/bobnet runs OTHER", 403, "cannot name a board or card"},
		{"limited-secret", "/bobnet next", 200, "NEWS-1"},
	} {
		if status, body := send(tc.token, tc.text); status != tc.status || !strings.Contains(body, tc.says) {
			t.Errorf("%s with %s: %d %s", tc.text, tc.token, status, body)
		}
	}
	eng.mu.Lock()
	asked := len(eng.commands)
	eng.mu.Unlock()
	past, _, stop := con.Follow("general", 0)
	stop()
	if asked != 3 || len(past) != 6 { // help and next twice: each its message and reply
		t.Fatalf("the engine answered %d commands, the channel has %d events; want 3 and 6", asked, len(past))
	}
}
