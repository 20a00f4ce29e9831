package httpapi

import (
	"cmp"
	"context"
	"errors"
	"fmt"
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

// CardFinder finds a card by its id or its handle, and its board, for a
// token limited to channels; *store.Store is one.
type CardFinder interface {
	BoardReader
	Card(ctx context.Context, id board.CardID) (board.Card, error)
	CardsByHandle(ctx context.Context, handle string) ([]board.Card, error)
}

// Cards serves PATCH /api/v1/cards/{id}, which changes a card through the
// engine: the same checked, audited path as chat commands.
type Cards struct {
	eng    CardEditor
	cards  CardFinder
	logger *slog.Logger
}

// NewCards returns the card routes editing through eng; cards finds the
// board of a card for tokens limited to channels.
func NewCards(eng CardEditor, cards CardFinder, logger *slog.Logger) *Cards {
	return &Cards{eng: eng, cards: cards, logger: logger}
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
	if limited(r) {
		// The card is found first, so that one out of the token's reach
		// is answered as an unknown one, and the change names the card
		// found by its id.
		var ok bool
		if id, ok = x.reachable(w, r, id, handle); !ok {
			return
		}
		handle = ""
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
	case errors.Is(err, board.ErrAmbiguous):
		httpjson.Error(w, http.StatusConflict, bot.Explain(err))
	default:
		engineError(w, x.logger, err)
	}
}

// reachable finds the card named by id or handle and answers false, as
// for an unknown card, when there is none or the request's token may not
// reach its board's channel.
func (x *Cards) reachable(w http.ResponseWriter, r *http.Request, id board.CardID, handle string) (board.CardID, bool) {
	var c board.Card
	var err error
	var channel string
	if handle != "" {
		c, channel, err = x.byHandle(r, handle)
		if errors.Is(err, board.ErrAmbiguous) {
			httpjson.Error(w, http.StatusConflict, bot.Explain(err))
			return "", false
		}
	} else if c, err = x.cards.Card(r.Context(), id); err == nil {
		channel, err = boardChannel(r.Context(), x.cards, c.BoardID)
	}
	switch {
	case err == nil && reaches(r, channel):
		return c.ID, true
	case err == nil, errors.Is(err, board.ErrNotFound):
		engineError(w, x.logger, fmt.Errorf("%w: card %s: %w", bot.ErrNoCard, cmp.Or(handle, string(id)), board.ErrNotFound))
	default:
		engineError(w, x.logger, fmt.Errorf("%w: find card: %w", bot.ErrUnavailable, err))
	}
	return "", false
}

// byHandle finds the one card a handle names among the boards the
// request's token reaches (board keys are unique per tenant, so several
// tenants may each have a NEWS-3): ErrNotFound when it reaches none,
// ErrAmbiguous, naming none of them, when it reaches several.
func (x *Cards) byHandle(r *http.Request, handle string) (board.Card, string, error) {
	cards, err := x.cards.CardsByHandle(r.Context(), handle)
	if err != nil {
		return board.Card{}, "", err
	}
	var found []board.Card
	var channel string
	for _, c := range cards {
		ch, err := boardChannel(r.Context(), x.cards, c.BoardID)
		if err != nil {
			return board.Card{}, "", err
		}
		if reaches(r, ch) {
			found, channel = append(found, c), ch
		}
	}
	switch len(found) {
	case 0:
		return board.Card{}, "", fmt.Errorf("card %s: %w", handle, board.ErrNotFound)
	case 1:
		return found[0], channel, nil
	}
	return board.Card{}, "", fmt.Errorf("card %s: the handle names cards of several tenants' boards; name the card by its id: %w", handle, board.ErrAmbiguous)
}
