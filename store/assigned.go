package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

// selectAssigned lists the unfinished cards whose assignee is exactly
// the person id $1, on the boards of tenant $2, most recently changed
// first.
const selectAssigned = `SELECT c.id, c.board_id, c.title, c.body, c.assignee, c.status, c.workspace_mode, c.acceptance_criteria,
    c.suggested_skills, c.notes, c.number, c.version, c.criteria_done, b.key || '-' || c.number,
    b.id, b.name, b.goal, b.key, b.channel, b.thread, b.created_at
FROM cards c JOIN boards b ON b.id = c.board_id
WHERE c.assignee = $1 AND b.tenant = $2 AND c.status <> 'Done'
ORDER BY c.updated_at DESC, c.id LIMIT $3`

// CardsAssigned returns up to limit cards not Done whose assignee is
// exactly person (a person id, board.Person; no name, no case folding),
// on the boards of tenant, most recently changed first. Their
// dependencies are left empty.
func (s *Store) CardsAssigned(ctx context.Context, person string, tenant board.Tenant, limit int) ([]board.AssignedCard, error) {
	if person == "" || tenant == "" || limit <= 0 {
		return nil, nil
	}
	rows, _ := s.pool.Query(ctx, selectAssigned, person, string(tenant), limit)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (board.AssignedCard, error) {
		var a board.AssignedCard
		c, err := scanCardAnd(row, &a.Board.ID, &a.Board.Name, &a.Board.Goal, &a.Board.Key, &a.Board.Channel, &a.Board.Thread, &a.Board.CreatedAt)
		a.Card = c
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("cards assigned: %w", err)
	}
	return out, nil
}

// scanCardAnd is scanCard for a row with more columns after the card's,
// scanned into more.
func scanCardAnd(row pgx.CollectableRow, more ...any) (board.Card, error) {
	var c board.Card
	var ac, ss, done []byte
	dest := append([]any{&c.ID, &c.BoardID, &c.Title, &c.Body, &c.Assignee, &c.Status, &c.WorkspaceMode, &ac, &ss, &c.Notes,
		&c.Number, &c.Version, &done, &c.Handle}, more...)
	err := row.Scan(dest...)
	if err == nil {
		err = errors.Join(json.Unmarshal(ac, &c.AcceptanceCriteria), json.Unmarshal(ss, &c.SuggestedSkills), json.Unmarshal(done, &c.CriteriaDone))
	}
	c.DependsOn = []board.CardID{}
	return c, err
}
