package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	selectBoardCardRefs = `SELECT c.id, b.key || '-' || c.number FROM cards c JOIN boards b ON b.id = c.board_id WHERE c.board_id = $1`

	insertPlanLink = `INSERT INTO card_links (board_id, card_id, depends_on) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`

	insertLinksAudit = `INSERT INTO audit_events (actor, action, channel, proposal_id, board_id, detail)
VALUES ($1, 'links_added', $2, $3, $4, $5)`
)

// querier is what the store's helpers need to run SQL: a pool, a pgx.Tx,
// or the connection Execute drives its transaction on.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// hasChanges reports whether a plan changes cards already on a board.
func hasChanges(env plan.Envelope) bool {
	for _, a := range env.Actions {
		if a.Type == plan.ActionUpdateCard || a.Type == plan.ActionAddLinks {
			return true
		}
	}
	return false
}

// applyChanges applies an approved plan's update_card and add_links
// actions to the target board, in plan order, inside the execution's
// transaction: after the plan's new cards are written (links may name
// them by temp id), before the execution is recorded. The plan was
// validated against the board when it was proposed; the board may have
// changed since, so every reference, the dependency rule and the absence
// of cycles are checked again here, and any failure rolls the whole plan
// back.
func applyChanges(ctx context.Context, tx querier, ex board.Execution, target board.ID, res *board.ExecResult) error {
	if !hasChanges(ex.Plan) {
		return nil
	}
	// The board's cards by lower-case id and handle, new ones included.
	refs := map[string]board.CardID{}
	handles := map[board.CardID]string{}
	rows, _ := tx.Query(ctx, selectBoardCardRefs, target)
	var id board.CardID
	var handle string
	if _, err := pgx.ForEachRow(rows, []any{&id, &handle}, func() error {
		refs[strings.ToLower(string(id))] = id
		refs[strings.ToLower(handle)] = id
		handles[id] = handle
		return nil
	}); err != nil {
		return fmt.Errorf("cards of board %s: %w", target, err)
	}
	// A temp id names a card of this plan; only those on the target board
	// may be linked to its cards.
	resolve := func(ref string, allowTemp bool) (board.CardID, bool) {
		if allowTemp {
			if id, ok := res.CardIDs[ref]; ok {
				_, onTarget := handles[id]
				return id, onTarget
			}
		}
		id, ok := refs[strings.ToLower(ref)]
		return id, ok
	}
	for i, a := range ex.Plan.Actions {
		path := fmt.Sprintf("actions[%d]", i)
		switch a.Type {
		case plan.ActionUpdateCard:
			id, ok := resolve(a.Card, false)
			if !ok {
				return fmt.Errorf("%w: %s.card: no card %q on the board", board.ErrInvalidPlan, path, a.Card)
			}
			up, err := changeCard(ctx, tx, board.CardChange{
				Card: id, Actor: ex.ApprovedBy, Via: "plan", Channel: ex.Channel,
				Status: a.Status, Assignee: a.Assignee, Title: a.Title, Body: a.Body,
			})
			if err != nil {
				return fmt.Errorf("%w: %s: %w", board.ErrInvalidPlan, path, err)
			}
			if len(up.Changes) > 0 {
				res.Updated++
			}
		case plan.ActionAddLinks:
			var added []string
			var starts []board.CardID
			for j, l := range a.Links {
				from, ok1 := resolve(l.Card, true)
				to, ok2 := resolve(l.DependsOn, true)
				if !ok1 || !ok2 {
					return fmt.Errorf("%w: %s.links[%d]: %q and %q are not both cards of the board", board.ErrInvalidPlan, path, j, l.Card, l.DependsOn)
				}
				if from == to {
					return fmt.Errorf("%w: %s.links[%d]: a card cannot depend on itself", board.ErrInvalidPlan, path, j)
				}
				starts = append(starts, from)
				tag, err := tx.Exec(ctx, insertPlanLink, target, from, to)
				if err != nil {
					return err
				}
				if tag.RowsAffected() == 1 {
					res.Links++
					added = append(added, handles[from]+" → "+handles[to])
				}
			}
			if cycle, err := boardCycle(ctx, tx, target, handles, starts); err != nil {
				return err
			} else if cycle != nil {
				return fmt.Errorf("%w: %s.links: the links would make a dependency cycle: %s", board.ErrInvalidPlan, path, strings.Join(cycle, " -> "))
			}
			detail, _ := json.Marshal(map[string]any{"links": added})
			if _, err := tx.Exec(ctx, insertLinksAudit, ex.ApprovedBy, ex.Channel, ex.ProposalID, target, detail); err != nil {
				return err
			}
		}
	}
	return nil
}

// boardCycle returns a dependency cycle on the board by handles, or nil.
// The search starts from the cards just linked, so the cycle reads from
// the link that closed it.
func boardCycle(ctx context.Context, tx querier, id board.ID, handles map[board.CardID]string, starts []board.CardID) ([]string, error) {
	rows, _ := tx.Query(ctx, selectLinks, id)
	deps := map[board.CardID][]board.CardID{}
	var card, dep board.CardID
	if _, err := pgx.ForEachRow(rows, []any{&card, &dep}, func() error {
		deps[card] = append(deps[card], dep)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("links of board %s: %w", id, err)
	}
	keys := make([]board.CardID, 0, len(handles))
	for k := range handles {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	keys = append(slices.Clone(starts), keys...)
	c := plan.FindCycle(deps, keys)
	if c == nil {
		return nil, nil
	}
	out := make([]string, len(c))
	for i, k := range c {
		out[i] = handles[k]
	}
	return out, nil
}
