package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
)

// CardEditor is what the card API needs from the bot engine; *bot.Engine
// is one.
type CardEditor interface {
	EditCard(ctx context.Context, ed bot.CardEdit) (board.CardUpdate, error)
}

// Cards serves PATCH /api/v1/cards/{id}, which changes a card through the
// engine: the same checked, audited path as chat commands.
type Cards struct {
	eng    CardEditor
	logger *slog.Logger
}

// NewCards returns the card routes editing through eng.
func NewCards(eng CardEditor, logger *slog.Logger) *Cards {
	return &Cards{eng: eng, logger: logger}
}

// Routes mounts the card routes; the caller puts the guards in front.
func (x *Cards) Routes(r chi.Router) {
	r.Patch("/api/v1/cards/{id}", x.patch)
}

// cardPatch is the body of PATCH /api/v1/cards/{id}. Absent fields are
// left as they are. Version, when given, makes the change conditional on
// the card not having changed since.
type cardPatch struct {
	User      string               `json:"user"`
	Status    *string              `json:"status"`
	Assignee  *string              `json:"assignee"`
	Title     *string              `json:"title"`
	Body      *string              `json:"body"`
	Criterion *board.CriterionMark `json:"criterion"`
	Version   int                  `json:"version"`
	// Via says which client made the change (the board page sends
	// "page"); it defaults to "api".
	Via string `json:"via"`
}

func (x *Cards) patch(w http.ResponseWriter, r *http.Request) {
	// The id or the handle people see (NEWS-3).
	ref := chi.URLParam(r, "id")
	id, err := board.ParseCardID(ref)
	handle := ""
	if err != nil {
		if _, _, ok := board.ParseHandle(ref); !ok {
			httpjson.Error(w, http.StatusNotFound, "no card "+ref+": give a card id (c_…) or a handle such as NEWS-3")
			return
		}
		handle = ref
	}
	var p cardPatch
	if !Decode(w, r, &p) || !ValidUser(w, r, p.User) {
		return
	}
	if p.Status == nil && p.Assignee == nil && p.Title == nil && p.Body == nil && p.Criterion == nil {
		httpjson.Error(w, http.StatusBadRequest, `nothing to change: send "status", "assignee", "title", "body" or "criterion"`)
		return
	}
	via := "api"
	if p.Via == "page" {
		via = "page"
	}
	up, err := x.eng.EditCard(r.Context(), bot.CardEdit{
		ID: id, Handle: handle, User: p.User, Via: via,
		Status: p.Status, Assignee: p.Assignee, Title: p.Title, Body: p.Body, Criterion: p.Criterion, IfVersion: p.Version,
	})
	var blocked *board.BlockedError
	var conflict *board.ConflictError
	var gate *board.ReviewGateError
	switch {
	case err == nil:
		httpjson.Write(w, http.StatusOK, up.Card)
	case errors.As(err, &blocked):
		refs := make([]map[string]any, 0, len(blocked.Blockers))
		for _, b := range blocked.Blockers {
			refs = append(refs, map[string]any{"id": b.ID, "handle": b.Handle, "title": b.Title, "status": b.Status})
		}
		httpjson.Write(w, http.StatusConflict, map[string]any{"error": bot.Explain(err), "blocked_by": refs})
	case errors.As(err, &conflict):
		httpjson.Write(w, http.StatusConflict, map[string]any{"error": conflict.Error(), "card": conflict.Current})
	case errors.As(err, &gate):
		httpjson.Write(w, http.StatusConflict, map[string]any{"error": gate.Error(), "review": map[string]any{
			"run_id": gate.Run, "card_id": gate.Card.ID, "handle": gate.Card.Handle, "path": gate.ReviewPath(),
			"commands": []string{"accept " + gate.Card.Handle, "sendback " + gate.Card.Handle + " <why>"},
		}})
	case errors.Is(err, board.ErrInvalidChange), errors.Is(err, bot.ErrUnknownProfile):
		httpjson.Error(w, http.StatusBadRequest, err.Error())
	default:
		engineError(w, x.logger, err)
	}
}
