package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// nextSurface answers NextCards with one board; any other lookup panics
// (the embedded Surface is nil): the commands tested ask nothing else.
type nextSurface struct{ bot.Surface }

func (nextSurface) NextCards(context.Context, bot.Channel) (board.Status, error) {
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
			replies = append(replies, ev.Data.(bot.Reply).Text)
		}
	}
	if len(replies) != 4 || replies[0] != want {
		t.Fatalf("replies in the channel: %q", replies)
	}
}
