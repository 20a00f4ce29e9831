package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
)

func (c *Chat) postMessage(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "channel")
	if !board.ValidConsoleName(name) {
		httpjson.Error(w, http.StatusBadRequest, "channel names are 1 to 64 lower-case letters, digits, - or _, starting with a letter or digit")
		return
	}
	var body struct {
		User string `json:"user"`
		Text string `json:"text"`
	}
	if !Decode(w, r, &body) || !ValidUser(w, r, body.User) || !reachConsole(w, r, name) || !c.allow(w, r) {
		return
	}
	body.Text = strings.TrimSpace(body.Text)
	if body.Text == "" || len(body.Text) > 8000 {
		httpjson.Error(w, http.StatusBadRequest, `"text" is required, at most 8000 characters`)
		return
	}
	if !PlainText(w, "text", body.Text) {
		return
	}
	ch := board.Channel{Source: board.SourceConsole, ID: name}
	if words, ok := consoleCommand(body.Text); ok {
		c.postCommand(w, r, ch, body.User, body.Text, words)
		return
	}
	c.submit(w, r, ch, body.User, body.Text, body.Text)
}

// submit shows a message (text, as said) in its channel and submits the
// request in it (req) to the engine.
func (c *Chat) submit(w http.ResponseWriter, r *http.Request, ch board.Channel, user, text, req string) {
	name := ch.ID
	// Each console message starts its own thread, named after it.
	thread := board.Thread{Channel: ch, ID: strconv.FormatInt(time.Now().UnixNano(), 36)}
	// The message is shown before it is submitted, so no answer to it can
	// reach the channel first; a refusal is shown after it.
	id := bot.NewRequestID()
	c.channels.Publish(name, "message", map[string]any{"user": user, "text": text, "request_id": id})
	c.channels.Publish(name, "working", map[string]any{"request_id": id})
	got, err := c.eng.Submit(r.Context(), board.Request{ID: id, Thread: thread, User: user, Text: req})
	if err != nil {
		if !errors.Is(err, bot.ErrRateLimited) { // the engine tells a throttled person itself
			c.channels.Publish(name, "reply", board.Reply{Kind: board.ReplyError, Text: "That message was not taken. " + bot.Explain(err)})
		}
		c.engineError(w, err)
		return
	}
	httpjson.Write(w, http.StatusAccepted, map[string]any{"request_id": got})
}

// getRequest answers where a request stands. A token limited to
// channels has the request's record read first: a request of a channel
// out of its reach is answered as an unknown one is.
func (c *Chat) getRequest(w http.ResponseWriter, r *http.Request) {
	id, err := bot.ParseRequestID(chi.URLParam(r, "id"))
	if err == nil && limited(r) {
		var rec board.RequestRecord
		rec, err = c.requests.Request(r.Context(), id)
		if err == nil && !reaches(r, rec.Request.Thread.Channel.Key()) {
			err = fmt.Errorf("request %s: %w", id, bot.ErrNotFound) // as the request store words an unknown one
		}
	}
	var st board.RequestStatus
	if err == nil {
		st, err = c.eng.Request(r.Context(), id)
	}
	if err != nil {
		c.engineError(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, st)
}
