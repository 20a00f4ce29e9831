package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/plan"
)

// RunStore is what the runs API needs of storage; *store.Store is one.
// Boards are read for a token limited to channels.
type RunStore interface {
	BoardReader
	StartRun(ctx context.Context, st board.RunStart) (board.Run, error)
	Run(ctx context.Context, id board.RunID) (board.Run, error)
	Runs(ctx context.Context, id board.ID, limit int) ([]board.Run, error)
	StopRun(ctx context.Context, id board.RunID, user string) (board.Run, error)
}

// RunEngine tells a board's thread that a run started and decides
// reviews under the channel's policy; *bot.Engine is one.
type RunEngine interface {
	Started(ctx context.Context, r board.Run)
	ReviewRunCard(ctx context.Context, run board.RunID, card board.CardID, round int, user string, accept bool, reason string) (board.CardUpdate, error)
}

// Runs serves the runs of boards: start, list, read, review, stop.
type Runs struct {
	store RunStore
	eng   RunEngine
	// runners says who works an assignee's cards (run.Worker.Runners).
	runners  plan.Runners
	deadline time.Duration
	base     string // the public URL, for run page links
}

// NewRuns makes the runs API; deadline is how long a run may take.
func NewRuns(store RunStore, eng RunEngine, runners plan.Runners, deadline time.Duration, publicURL string) *Runs {
	return &Runs{store: store, eng: eng, runners: runners, deadline: deadline, base: strings.TrimRight(publicURL, "/")}
}

// Routes mounts the runs API; the caller puts the token guard in front.
func (x *Runs) Routes(r chi.Router) {
	r.Post("/api/v1/boards/{id}/runs", x.start)
	r.Get("/api/v1/boards/{id}/runs", x.list)
	r.Get("/api/v1/runs/{id}", x.read)
	r.Post("/api/v1/runs/{id}/cards/{card}/review", x.review)
	r.Post("/api/v1/runs/{id}/stop", x.stop)
}

// runView is a run as the API answers it, with its page.
type runView struct {
	board.Run
	URL string `json:"url"`
}

func (x *Runs) view(r board.Run) runView {
	return runView{Run: r, URL: x.base + "/boards/" + string(r.Board) + "/runs/" + strconv.Itoa(r.Number)}
}

// who reads {"user"} bodies: a person's name, 1 to 100 characters.
type who struct {
	User string `json:"user"`
}

func (x *Runs) start(w http.ResponseWriter, r *http.Request) {
	id, err := board.ParseID(chi.URLParam(r, "id"))
	if err != nil {
		httpjson.Error(w, http.StatusNotFound, "no board "+chi.URLParam(r, "id"))
		return
	}
	var body who
	if !Decode(w, r, &body) || !ValidUser(w, r, body.User) || !x.reachBoard(w, r, id) {
		return
	}
	run, err := x.store.StartRun(r.Context(), board.RunStart{Board: id, User: body.User, Trigger: "manual", Runners: x.runners, Deadline: x.deadline})
	if err != nil {
		x.fail(w, err)
		return
	}
	x.eng.Started(r.Context(), run)
	httpjson.Write(w, http.StatusCreated, x.view(run))
}

func (x *Runs) list(w http.ResponseWriter, r *http.Request) {
	id, err := board.ParseID(chi.URLParam(r, "id"))
	if err != nil {
		httpjson.Error(w, http.StatusNotFound, "no board "+chi.URLParam(r, "id"))
		return
	}
	if !x.reachBoard(w, r, id) {
		return
	}
	runs, err := x.store.Runs(r.Context(), id, 50)
	if err != nil {
		x.fail(w, err)
		return
	}
	out := make([]runView, len(runs))
	for i, run := range runs {
		out[i] = x.view(run)
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"runs": out})
}

func (x *Runs) read(w http.ResponseWriter, r *http.Request) {
	id, err := board.ParseRunID(chi.URLParam(r, "id"))
	if err != nil {
		httpjson.Error(w, http.StatusNotFound, "no run "+chi.URLParam(r, "id"))
		return
	}
	run, err := x.store.Run(r.Context(), id)
	if err != nil {
		x.fail(w, err)
		return
	}
	if !x.reachBoard(w, r, run.Board) {
		return
	}
	httpjson.Write(w, http.StatusOK, x.view(run))
}

// reachRun answers, as for an unknown run, and reports false when a
// token limited to channels names a run it may not reach or that does
// not exist; other requests go on without a read.
func (x *Runs) reachRun(w http.ResponseWriter, r *http.Request, id board.RunID) bool {
	if !limited(r) {
		return true
	}
	run, err := x.store.Run(r.Context(), id)
	if err != nil {
		x.fail(w, err)
		return false
	}
	return x.reachBoard(w, r, run.Board)
}

// reachBoard answers, as for an unknown board, and reports false when a
// token limited to channels names a board it may not reach or that does
// not exist; other requests go on without a read.
func (x *Runs) reachBoard(w http.ResponseWriter, r *http.Request, id board.ID) bool {
	if err := reachBoardErr(r, x.store, id); err != nil {
		x.fail(w, err)
		return false
	}
	return true
}

// reviewBody is the body of POST /api/v1/runs/{id}/cards/{card}/review.
type reviewBody struct {
	User     string `json:"user"`
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
	// Round, when given, is the round of the output decided (the run
	// card's "rounds" when it was read); a decision on an earlier round
	// is refused with 409 and changes nothing.
	Round *int `json:"round"`
}

func (x *Runs) review(w http.ResponseWriter, r *http.Request) {
	id, err := board.ParseRunID(chi.URLParam(r, "id"))
	if err != nil {
		httpjson.Error(w, http.StatusNotFound, "no run "+chi.URLParam(r, "id"))
		return
	}
	var body reviewBody
	if !Decode(w, r, &body) || !ValidUser(w, r, body.User) {
		return
	}
	accept := body.Decision == "accept"
	switch {
	case body.Decision != "accept" && body.Decision != "send_back":
		httpjson.Error(w, http.StatusBadRequest, `"decision" is accept or send_back`)
		return
	case !accept && strings.TrimSpace(body.Reason) == "":
		httpjson.Error(w, http.StatusBadRequest, `send_back needs a "reason": it goes to whoever works the card next`)
		return
	case utf8.RuneCountInString(body.Reason) > 2000:
		httpjson.Error(w, http.StatusBadRequest, `"reason" is at most 2000 characters`)
		return
	case !PlainText(w, "reason", body.Reason), !x.reachRun(w, r, id):
		return
	case body.Round != nil && *body.Round < 0:
		httpjson.Error(w, http.StatusBadRequest, `"round" is the card's rounds when its output was read: 0 or more`)
		return
	}
	round := board.AnyRound
	if body.Round != nil {
		round = *body.Round
	}
	card, ok := x.card(w, r, id)
	if !ok {
		return
	}
	up, err := x.eng.ReviewRunCard(r.Context(), id, card, round, body.User, accept, strings.TrimSpace(body.Reason))
	if err != nil {
		x.fail(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, up.Card)
}

// card reads the {card} of a run's route: a card id, or a handle
// (NEWS-3) of one of the run's cards; board keys being unique only per
// tenant, a handle is looked for on the run's board alone.
func (x *Runs) card(w http.ResponseWriter, r *http.Request, run board.RunID) (board.CardID, bool) {
	ref := chi.URLParam(r, "card")
	if id, err := board.ParseCardID(ref); err == nil {
		return id, true
	}
	rn, err := x.store.Run(r.Context(), run)
	if err != nil {
		x.fail(w, err)
		return "", false
	}
	for _, c := range rn.Cards {
		if strings.EqualFold(c.Handle, strings.TrimSpace(ref)) {
			return c.Card, true
		}
	}
	x.fail(w, fmt.Errorf("card %s in run %s: %w", ref, run, board.ErrNotFound))
	return "", false
}

func (x *Runs) stop(w http.ResponseWriter, r *http.Request) {
	id, err := board.ParseRunID(chi.URLParam(r, "id"))
	if err != nil {
		httpjson.Error(w, http.StatusNotFound, "no run "+chi.URLParam(r, "id"))
		return
	}
	var body who
	if !Decode(w, r, &body) || !ValidUser(w, r, body.User) || !x.reachRun(w, r, id) {
		return
	}
	run, err := x.store.StopRun(r.Context(), id, body.User)
	if err != nil {
		x.fail(w, err)
		return
	}
	httpjson.Write(w, http.StatusOK, x.view(run))
}

// fail answers a store error with its status and a sentence for people.
func (x *Runs) fail(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, bot.ErrForbidden):
		httpjson.Error(w, http.StatusForbidden, err.Error())
	case errors.Is(err, board.ErrNotFound), errors.Is(err, bot.ErrNotFound):
		httpjson.Error(w, http.StatusNotFound, "no such board, run or card")
	case errors.Is(err, board.ErrRunGoing):
		httpjson.Error(w, http.StatusConflict, "this board has a run going; stop it or wait for it to end")
	case errors.Is(err, board.ErrStaleReview):
		httpjson.Error(w, http.StatusConflict, bot.Explain(err))
	case errors.Is(err, board.ErrNotRunnable):
		httpjson.Error(w, http.StatusConflict, err.Error())
	case errors.Is(err, board.ErrAmbiguous):
		httpjson.Error(w, http.StatusConflict, bot.Explain(err))
	default:
		httpjson.Error(w, http.StatusServiceUnavailable, "the board store is unavailable; try again shortly")
	}
}
