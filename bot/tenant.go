package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/board"
)

// The engine's lookups of what a person names in chat: a board key, a
// card handle, a board id. Each looks only among the boards of the
// caller's tenant (board.TenantOf its channel), and answers for another
// tenant's key, handle or id exactly as for one nobody has: the same
// error, so the same words in every surface.

// TenantOf is the tenant a channel belongs to.
func TenantOf(ch board.Channel) board.Tenant { return board.TenantOf(ch.Key()) }

// runBoard finds the board a command names: a board key of the caller's
// tenant (NEWS), or, with none, the channel's current board.
func (e *Engine) runBoard(ctx context.Context, ch board.Channel, ref string) (board.Board, error) {
	if e.deps.Runs == nil {
		return board.Board{}, ErrNoRuns
	}
	var b board.Board
	var err error
	if ref = strings.TrimSpace(ref); ref != "" {
		b, err = e.deps.Runs.BoardByKey(ctx, TenantOf(ch), ref)
	} else {
		b, err = e.deps.Boards.ChannelBoard(ctx, ch.Key())
	}
	switch {
	case errors.Is(err, board.ErrNotFound) && ref != "":
		return board.Board{}, fmt.Errorf("no board has the key %s: %w", strings.ToUpper(ref), ErrNoBoardKey)
	case errors.Is(err, board.ErrNotFound):
		return board.Board{}, fmt.Errorf("channel %s has no board: %w", ch.Key(), ErrNoBoard)
	case err != nil:
		return board.Board{}, unavailable("find the board", err)
	}
	return b, nil
}

// resolveCard finds what a person in ch calls a card: a handle of any of
// the tenant's boards (NEWS-3), else, on the channel's current board, a
// number (#3, 3), an id or the start of a title.
func (e *Engine) resolveCard(ctx context.Context, cs CardStore, ch board.Channel, ref string) (board.Card, error) {
	if _, _, ok := board.ParseHandle(ref); ok {
		c, err := cs.CardByHandle(ctx, TenantOf(ch), ref)
		switch {
		case err == nil:
			return c, nil
		case !errors.Is(err, board.ErrNotFound):
			return board.Card{}, unavailable("find card", err)
		}
		// Not a handle of the tenant: perhaps a title such as "Q3-2".
	}
	b, err := e.deps.Boards.ChannelBoard(ctx, ch.Key())
	if errors.Is(err, board.ErrNotFound) {
		return board.Card{}, fmt.Errorf("channel %s has no board: %w", ch.Key(), ErrNoBoard)
	}
	if err != nil {
		return board.Card{}, unavailable("find card", err)
	}
	b, cards, err := cs.Board(ctx, b.ID)
	if err != nil {
		return board.Card{}, unavailable("find card", err)
	}
	c, err := board.MatchCard(b, cards, ref)
	if errors.Is(err, board.ErrNotFound) {
		return board.Card{}, fmt.Errorf("%w: %w", ErrNoCard, err)
	}
	return c, err
}

// editedCard resolves the card of an edit that names no id: by its handle
// (within the channel's tenant; with no channel, the API, within any) or
// by what a person in the channel called it.
func (e *Engine) editedCard(ctx context.Context, cs CardStore, ed CardEdit) (board.Card, error) {
	if ed.Handle == "" {
		return e.resolveCard(ctx, cs, ed.Channel, ed.Ref)
	}
	var tenant board.Tenant
	if ed.Channel.ID != "" {
		tenant = TenantOf(ed.Channel)
	}
	c, err := cs.CardByHandle(ctx, tenant, ed.Handle)
	switch {
	case errors.Is(err, board.ErrNotFound):
		return board.Card{}, fmt.Errorf("%w: %w", ErrNoCard, err)
	case errors.Is(err, board.ErrAmbiguous):
		return board.Card{}, err
	case err != nil:
		return board.Card{}, unavailable("find card", err)
	}
	return c, nil
}

// BoardStatusIn is BoardStatus for a board id said in ch: a board of
// another tenant is ErrNotFound, exactly as an id nobody has.
func (e *Engine) BoardStatusIn(ctx context.Context, ch board.Channel, id board.ID) (board.Status, error) {
	st, err := e.BoardStatus(ctx, id)
	if err != nil {
		return board.Status{}, err
	}
	if !TenantOf(ch).Reaches(st.Board) {
		return board.Status{}, fmt.Errorf("board %s: %w", id, ErrNotFound)
	}
	return st, nil
}
