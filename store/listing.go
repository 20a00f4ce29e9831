package store

import (
	"context"
	"fmt"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

const selectBoardListing = `SELECT b.id, b.name, b.key, b.channel, b.created_at,
    coalesce((SELECT jsonb_object_agg(status, n) FROM (SELECT status, count(*) AS n FROM cards WHERE board_id = b.id GROUP BY status) c), '{}')
FROM boards b
WHERE $1 = '' OR (b.created_at, b.id) < (SELECT created_at, id FROM boards WHERE id = $1)
ORDER BY b.created_at DESC, b.id DESC LIMIT $2`

// Boards lists boards, newest first, limit at a time: after is the last
// board of the previous page ("" for the first). next is the board to
// continue after, "" on the last page.
func (s *Store) Boards(ctx context.Context, after board.ID, limit int) (list []board.Listing, next board.ID, err error) {
	rows, _ := s.pool.Query(ctx, selectBoardListing, after, limit+1)
	list, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (board.Listing, error) {
		var l board.Listing
		err := r.Scan(&l.ID, &l.Name, &l.Key, &l.Channel, &l.CreatedAt, &l.Counts)
		for _, n := range l.Counts {
			l.Cards += n
		}
		return l, err
	})
	if err != nil {
		return nil, "", fmt.Errorf("list boards: %w", err)
	}
	if len(list) > limit {
		list, next = list[:limit], list[limit-1].ID
	}
	return list, next, nil
}
