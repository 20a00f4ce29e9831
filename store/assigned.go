package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

// selectAssigned lists the unfinished cards whose assignee is one of the
// names ($1, lower case), most recently changed first.
const selectAssigned = `SELECT c.id, c.board_id, c.title, c.body, c.assignee, c.status, c.workspace_mode, c.acceptance_criteria,
    c.suggested_skills, c.notes, c.number, c.version, c.criteria_done, b.key || '-' || c.number,
    b.id, b.name, b.goal, b.key, b.channel, b.thread, b.created_at
FROM cards c JOIN boards b ON b.id = c.board_id
WHERE lower(c.assignee) = ANY($1) AND c.status <> 'Done'
ORDER BY c.updated_at DESC, c.id LIMIT $2`

// CardsAssigned returns up to limit cards not Done whose assignee is one
// of names (compared without case), on any board, most recently changed
// first. Their dependencies are left empty.
func (s *Store) CardsAssigned(ctx context.Context, names []string, limit int) ([]board.AssignedCard, error) {
	lower := make([]string, 0, len(names))
	for _, n := range names {
		if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
			lower = append(lower, n)
		}
	}
	if len(lower) == 0 || limit <= 0 {
		return nil, nil
	}
	rows, _ := s.pool.Query(ctx, selectAssigned, lower, limit)
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
