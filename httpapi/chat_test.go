package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/adapters/console"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpapi"
	"github.com/bobnet/bobnet/sse"
)

// fakeEngine answers by proposal id: "p_ok…" (padded to an id's length)
// succeeds, the others fail with the error their name says. A malformed id
// must not reach it: it answers one with errMalformedReached.
type fakeEngine struct {
	mu      sync.Mutex
	submits []board.Request
	err     error // returned by Submit when set
	// surface answers the chat commands' lookups through bot's grammar;
	// with none, a command is answered "answered <verb>".
	surface  bot.Surface
	commands []bot.Command
}

func (f *fakeEngine) Command(ctx context.Context, c bot.Command) bot.CommandAnswer {
	f.mu.Lock()
	f.commands = append(f.commands, c)
	s := f.surface
	f.mu.Unlock()
	if s == nil {
		return bot.CommandAnswer{Text: "answered " + c.Verb}
	}
	return bot.Verbs.Answer(ctx, s, c)
}

func (f *fakeEngine) Submit(_ context.Context, r board.Request) (board.RequestID, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "", f.err
	}
	f.submits = append(f.submits, r)
	return "r_oneaaaaaaaaaaaaa", nil
}

// errMalformedReached is what the fake engines answer for an id the
// console should have refused before asking them.
var errMalformedReached = errors.New("the engine was asked about a malformed id")

func (f *fakeEngine) Request(_ context.Context, id board.RequestID) (board.RequestStatus, error) {
	if _, err := board.ParseRequestID(string(id)); err != nil {
		return board.RequestStatus{}, errMalformedReached
	}
	if id != "r_oneaaaaaaaaaaaaa" {
		return board.RequestStatus{}, bot.ErrNotFound
	}
	return board.RequestStatus{ID: id, State: "done", ProposalID: "p_okaaaaaaaaaaaaaa"}, nil
}

func byID(id board.ProposalID) error {
	if _, err := board.ParseProposalID(string(id)); err != nil {
		return errMalformedReached
	}
	switch id {
	case "p_okaaaaaaaaaaaaaa":
		return nil
	case "p_decidedaaaaaaaaa":
		return &bot.DecidedError{State: board.ProposalApproved, By: "bob", BoardID: "b_1"}
	case "p_expiredaaaaaaaaa":
		return bot.ErrExpired
	case "p_forbiddenaaaaaaa":
		return bot.ErrForbidden
	case "p_downaaaaaaaaaaaa":
		return bot.ErrUnavailable
	}
	return bot.ErrNotFound
}

func (f *fakeEngine) Proposal(_ context.Context, id board.ProposalID) (board.Proposal, error) {
	if err := byID(id); err != nil {
		return board.Proposal{}, err
	}
	return board.Proposal{ID: id, State: board.ProposalPending, RequestedBy: "alice"}, nil
}

func (f *fakeEngine) Approve(_ context.Context, id board.ProposalID, _ string) (board.Approval, error) {
	if err := byID(id); err != nil {
		return board.Approval{}, err
	}
	return board.Approval{ProposalID: id, BoardID: "b_1", BoardURL: "http://x/boards/b_1"}, nil
}

func (f *fakeEngine) CancelWithReason(_ context.Context, id board.ProposalID, _, _ string) (board.Proposal, error) {
	if err := byID(id); err != nil {
		return board.Proposal{}, err
	}
	return board.Proposal{ID: id, State: board.ProposalCancelled}, nil
}

func (f *fakeEngine) Revise(_ context.Context, id board.ProposalID, _, _ string) (board.RequestID, error) {
	return "r_twoaaaaaaaaaaaaa", byID(id)
}

func (f *fakeEngine) ProposeAgain(_ context.Context, id board.ProposalID, _ string) (board.RequestID, error) {
	return "r_threeaaaaaaaaaaa", byID(id)
}

func (f *fakeEngine) Withdraw(_ context.Context, id board.ProposalID, _ string) (board.Proposal, error) {
	if err := byID(id); err != nil {
		return board.Proposal{}, err
	}
	return board.Proposal{ID: id, State: board.ProposalPending}, nil
}

// noSuccessors knows of no revision of any proposal.
type noSuccessors struct{}

func (noSuccessors) Successor(context.Context, board.ProposalID) (board.ProposalID, error) {
	return "", nil
}

// noBoards lists no boards.
type noBoards struct{}

func (noBoards) Boards(context.Context, board.ID, int, []string) ([]board.Listing, board.ID, error) {
	return nil, "", nil
}

// noRequests knows no request records; only tokens limited to channels
// read them.
type noRequests struct{}

func (noRequests) Request(_ context.Context, id board.RequestID) (board.RequestRecord, error) {
	return board.RequestRecord{}, fmt.Errorf("request %s: %w", id, bot.ErrNotFound)
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newChat is the chat routes over eng and a console's channels kept in
// memory.
func newChat(eng httpapi.ChatEngine) (*console.Console, *httpapi.Chat) {
	c := console.New(eng, nil, discard())
	return c, httpapi.NewChat(httpapi.ChatDeps{Engine: eng, Channels: c, Successors: noSuccessors{}, Boards: noBoards{}, Requests: noRequests{}, Streams: sse.New(sse.Limits{})}, discard())
}

// newServer serves the chat routes over eng beside the console's pages.
func newServer(t *testing.T, eng httpapi.ChatEngine) (*console.Console, *httptest.Server) {
	t.Helper()
	c, chat := newChat(eng)
	r := chi.NewRouter()
	chat.Routes(r)
	c.PageRoutes(r)
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return c, srv
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, &fakeEngine{})
	big := `{"user":"alice","text":"` + strings.Repeat("a", httpapi.MaxBody) + `"}`
	tests := []struct {
		name, method, path, body string
		status                   int
		contains                 string
	}{
		{"post message", "POST", "/api/v1/channels/general/messages", `{"user":"alice","text":"make a board"}`, 202, `"request_id":"r_oneaaaaaaaaaaaaa"`},
		{"bad channel", "POST", "/api/v1/channels/Bad%20Name/messages", `{"user":"alice","text":"x"}`, 400, "channel names"},
		{"bad json", "POST", "/api/v1/channels/general/messages", `{"user":`, 400, "invalid JSON"},
		{"unknown field", "POST", "/api/v1/channels/general/messages", `{"user":"alice","text":"x","extra":1}`, 400, "unknown field"},
		{"two values", "POST", "/api/v1/channels/general/messages", `{"user":"alice","text":"x"}{}`, 400, "more than one"},
		{"missing user", "POST", "/api/v1/channels/general/messages", `{"text":"x"}`, 400, `\"user\" is required`},
		{"missing text", "POST", "/api/v1/channels/general/messages", `{"user":"alice","text":"  "}`, 400, `\"text\" is required`},
		{"too big", "POST", "/api/v1/channels/general/messages", big, 413, "larger than"},
		{"get request", "GET", "/api/v1/requests/r_oneaaaaaaaaaaaaa", "", 200, `"proposal_id":"p_okaaaaaaaaaaaaaa"`},
		{"unknown request", "GET", "/api/v1/requests/r_nineaaaaaaaaaaaa", "", 404, "error"},
		{"malformed request", "GET", "/api/v1/requests/r_9", "", 404, `"error":"request \"r_9\": malformed id: not found"`},
		{"get proposal", "GET", "/api/v1/proposals/p_okaaaaaaaaaaaaaa", "", 200, `"requested_by":"alice"`},
		{"unknown proposal", "GET", "/api/v1/proposals/p_nopeaaaaaaaaaaaa", "", 404, "error"},
		{"malformed proposal", "GET", "/api/v1/proposals/p_ok", "", 404, "malformed id: not found"},
		{"proposal path", "GET", "/api/v1/proposals/..%2F..%2Fhealthz", "", 404, "malformed id: not found"},
		{"approve", "POST", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/approve", `{"user":"alice"}`, 200, `"board_url":"http://x/boards/b_1"`},
		{"approve decided", "POST", "/api/v1/proposals/p_decidedaaaaaaaaa/approve", `{"user":"alice"}`, 409, `"error":"proposal already approved (board b_1)"`},
		{"approve expired", "POST", "/api/v1/proposals/p_expiredaaaaaaaaa/approve", `{"user":"alice"}`, 409, `"state":"expired"`},
		{"approve forbidden", "POST", "/api/v1/proposals/p_forbiddenaaaaaaa/approve", `{"user":"alice"}`, 403, "error"},
		{"approve unknown", "POST", "/api/v1/proposals/p_nopeaaaaaaaaaaaa/approve", `{"user":"alice"}`, 404, "error"},
		{"approve malformed", "POST", "/api/v1/proposals/P_OKAAAAAAAAAAAAAA/approve", `{"user":"alice"}`, 404, "malformed id: not found"},
		{"cancel malformed", "POST", "/api/v1/proposals/p_okaaaaaaaaaaaaa0/cancel", `{"user":"alice"}`, 404, "malformed id: not found"},
		{"approve down", "POST", "/api/v1/proposals/p_downaaaaaaaaaaaa/approve", `{"user":"alice"}`, 503, "unavailable"},
		{"approve no user", "POST", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/approve", `{}`, 400, `\"user\" is required`},
		{"cancel", "POST", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/cancel", `{"user":"alice"}`, 200, `"state":"cancelled"`},
		{"cancel decided", "POST", "/api/v1/proposals/p_decidedaaaaaaaaa/cancel", `{"user":"alice"}`, 409, `"board_id":"b_1"`},
		{"revise", "POST", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/revise", `{"user":"alice","feedback":"fewer cards"}`, 202, `"request_id":"r_twoaaaaaaaaaaaaa"`},
		{"revise no feedback", "POST", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/revise", `{"user":"alice"}`, 400, `\"feedback\" is required`},
		{"propose again", "POST", "/api/v1/proposals/p_expiredaaaaaaaaa/propose-again", `{"user":"alice"}`, 409, "expired"},
		{"propose again ok", "POST", "/api/v1/proposals/p_okaaaaaaaaaaaaaa/propose-again", `{"user":"alice"}`, 202, `"request_id":"r_threeaaaaaaaaaaa"`},
		{"page", "GET", "/", "", 200, "<html"},
		{"channel page", "GET", "/c/news", "", 200, "<html"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, b)
			}
			if !strings.Contains(string(b), tc.contains) {
				t.Fatalf("body %s lacks %q", b, tc.contains)
			}
		})
	}
}

func TestSubmitErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
	}{{bot.ErrRateLimited, 429}, {bot.ErrUnavailable, 503}} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			t.Parallel()
			_, srv := newServer(t, &fakeEngine{err: tc.err})
			resp, err := http.Post(srv.URL+"/api/v1/channels/general/messages", "application/json", strings.NewReader(`{"user":"alice","text":"x"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
		})
	}
}

// readEvent reads one SSE event (id, event, data) skipping comments and
// the retry line.
func readEvent(t *testing.T, r *bufio.Reader) (id, typ, data string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case strings.HasPrefix(line, "id: "):
			id = line[4:]
		case strings.HasPrefix(line, "event: "):
			typ = line[7:]
		case strings.HasPrefix(line, "data: "):
			data = line[6:]
		case line == "" && typ != "":
			return id, typ, data
		}
	}
}

func TestEventsReplayLiveAndResume(t *testing.T) {
	t.Parallel()
	c, srv := newServer(t, &fakeEngine{})
	ctx := context.Background()
	th := board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "general"}}
	if err := c.Reply(ctx, th, board.Reply{Kind: board.ReplyAnswer, Text: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Reply(ctx, th, board.Reply{Kind: board.ReplyAnswer, Text: "second"}); err != nil {
		t.Fatal(err)
	}
	// Another channel's events never show here.
	_ = c.Reply(ctx, board.Thread{Channel: board.Channel{Source: board.SourceConsole, ID: "other"}}, board.Reply{Text: "elsewhere"})

	open := func(lastID string) (*http.Response, *bufio.Reader) {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/channels/general/events", nil)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		t.Cleanup(cancel)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Fatalf("content type %q", ct)
		}
		return resp, bufio.NewReader(resp.Body)
	}

	_, r := open("")
	id, typ, data := readEvent(t, r)
	if id != "1" || typ != "reply" || !strings.Contains(data, `"first"`) {
		t.Fatalf("first replayed event: %s %s %s", id, typ, data)
	}
	id, _, data = readEvent(t, r)
	if id != "2" || !strings.Contains(data, `"second"`) {
		t.Fatalf("second replayed event: %s %s", id, data)
	}
	// Live: an event published now arrives on the open stream.
	if _, err := c.PostPreview(ctx, board.Proposal{ID: "p_1", Thread: th, State: board.ProposalPending}); err != nil {
		t.Fatal(err)
	}
	id, typ, data = readEvent(t, r)
	if id != "3" || typ != "proposal" {
		t.Fatalf("live event: %s %s %s", id, typ, data)
	}
	var ev sse.Event
	if err := json.Unmarshal([]byte(data), &ev); err != nil || ev.ID != 3 {
		t.Fatalf("data is not the event JSON: %v %s", err, data)
	}

	// Resume: only events after Last-Event-ID are replayed.
	_, r2 := open("2")
	id, typ, _ = readEvent(t, r2)
	if id != "3" || typ != "proposal" {
		t.Fatalf("resumed at %s %s, want 3 proposal", id, typ)
	}
}

func TestEventsBadChannel(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, &fakeEngine{})
	for _, name := range []string{"UPPER", "-x", strings.Repeat("a", 65)} {
		resp, err := http.Get(srv.URL + "/api/v1/channels/" + name + "/events")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Fatalf("%s: status %d", name, resp.StatusCode)
		}
	}
}

// TestChannelNameLength: a channel name has 64 characters at most.
func TestChannelNameLength(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, &fakeEngine{})
	for n, want := range map[int]int{64: http.StatusAccepted, 65: http.StatusBadRequest} {
		resp, err := http.Post(srv.URL+"/api/v1/channels/"+strings.Repeat("a", n)+"/messages", "application/json", strings.NewReader(`{"user":"alice","text":"x"}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%d letters: status %d, want %d", n, resp.StatusCode, want)
		}
	}
}
