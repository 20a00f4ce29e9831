package httpapi

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpjson"
	"github.com/bobnet/bobnet/plan"
)

// OutputStore is what posting a dispatched card's output needs of
// storage; *store.Store is one.
type OutputStore interface {
	RunTokenScope(ctx context.Context, token string) (board.TokenScope, error)
	PostRunOutput(ctx context.Context, o board.RunOutput) (board.RunJob, board.CardUpdate, error)
}

// OutputTeller tells the board's thread and the callbacks about an
// output once it is kept; *bot.Engine is one.
type OutputTeller interface {
	CardOutput(ctx context.Context, job board.RunJob, up board.CardUpdate)
}

// Outputs serves POST /api/v1/runs/{id}/cards/{card}/output: another
// tool (runner hook:<name>) posts the output of the card it was
// dispatched, with the card's token from the card.dispatched event. That
// token is no API token: it opens this route for its card of its run
// and nothing else, so the route is mounted outside the API token guard.
type Outputs struct {
	store OutputStore
	tell  OutputTeller
}

// NewOutputs makes the outputs route.
func NewOutputs(store OutputStore, tell OutputTeller) *Outputs {
	return &Outputs{store: store, tell: tell}
}

// Routes mounts the route; it checks its own token.
func (x *Outputs) Routes(r chi.Router) {
	r.Post("/api/v1/runs/{id}/cards/{card}/output", x.post)
}

// outputBody is the body of POST /api/v1/runs/{id}/cards/{card}/output.
type outputBody struct {
	Output string `json:"output"`
	Status string `json:"status"`
}

// maxOutputBody leaves room for the JSON escaping of an output of the
// largest size (a newline or a quote takes two bytes).
const maxOutputBody = 2*board.MaxOutput + 4<<10

func (x *Outputs) post(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		unauthorized(w, "missing card token: send Authorization: Bearer <the token of the card.dispatched event>")
		return
	}
	scope, err := x.store.RunTokenScope(r.Context(), token)
	switch {
	case errors.Is(err, board.ErrRunToken):
		unauthorized(w, "unknown card token, or one a later dispatch of its card replaced")
		return
	case err != nil:
		httpjson.Error(w, http.StatusServiceUnavailable, "cannot check the card token right now; try again shortly")
		return
	}
	ref := chi.URLParam(r, "card")
	sameCard := subtle.ConstantTimeCompare([]byte(ref), []byte(scope.Card)) == 1 || strings.EqualFold(ref, scope.Handle)
	if chi.URLParam(r, "id") != string(scope.Run) || !sameCard {
		httpjson.Error(w, http.StatusForbidden, fmt.Sprintf("this token is for card %s of run %s only", scope.Handle, scope.Run))
		return
	}
	var body outputBody
	if !DecodeUpTo(w, r, &body, maxOutputBody) {
		return
	}
	switch {
	case len(body.Output) > board.MaxOutput:
		httpjson.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(`"output" is larger than %d KiB`, board.MaxOutput>>10))
		return
	case strings.TrimSpace(body.Output) == "":
		httpjson.Error(w, http.StatusBadRequest, `"output" is required: the card's output in Markdown (with "status": "failed", why the attempt failed)`)
		return
	case body.Status != "" && body.Status != "review" && body.Status != "done" && body.Status != "failed":
		httpjson.Error(w, http.StatusBadRequest, `"status" is review, done or failed, or left out`)
		return
	}
	if _, err := plan.CheckText(body.Output, false); err != nil {
		httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf(`"output" %v; send Markdown as plain text`, err))
		return
	}
	job, up, err := x.store.PostRunOutput(r.Context(), board.RunOutput{
		Run: scope.Run, Card: scope.Card, TokenHash: board.HashRunToken(token), Output: body.Output, Status: body.Status, Actor: scope.Runner,
	})
	switch {
	case errors.Is(err, board.ErrRunToken):
		unauthorized(w, "this card token was replaced by a later dispatch of its card")
		return
	case errors.Is(err, board.ErrNotRunnable):
		httpjson.Error(w, http.StatusConflict, strings.TrimPrefix(err.Error(), fmt.Sprintf("output of %s in run %s: ", scope.Card, scope.Run)))
		return
	case errors.Is(err, board.ErrNotFound):
		httpjson.Error(w, http.StatusNotFound, "no such card in this run")
		return
	case err != nil:
		httpjson.Error(w, http.StatusServiceUnavailable, "the board store is unavailable; try again shortly")
		return
	}
	if body.Status != "failed" {
		x.tell.CardOutput(r.Context(), job, up)
	}
	httpjson.Write(w, http.StatusOK, job.RunCard)
}

// unauthorized answers 401 with the challenge a bearer route gives.
func unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="bobnet"`)
	httpjson.Error(w, http.StatusUnauthorized, msg)
}
