package board

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listing is a board as a list of boards shows it: what it is and how far
// along its cards are.
type Listing struct {
	ID        ID
	Name      string
	Key       string
	Channel   string
	CreatedAt time.Time
	Cards     int
	// Counts are the cards by status, only statuses in use.
	Counts map[string]int
}

const selectBoardListing = `SELECT b.id, b.name, b.key, b.channel, b.created_at,
    coalesce((SELECT jsonb_object_agg(status, n) FROM (SELECT status, count(*) AS n FROM cards WHERE board_id = b.id GROUP BY status) c), '{}')
FROM boards b
WHERE $1 = '' OR (b.created_at, b.id) < (SELECT created_at, id FROM boards WHERE id = $1)
ORDER BY b.created_at DESC, b.id DESC LIMIT $2`

// Boards lists boards, newest first, limit at a time: after is the last
// board of the previous page ("" for the first). next is the board to
// continue after, "" on the last page.
func (s *Store) Boards(ctx context.Context, after ID, limit int) (list []Listing, next ID, err error) {
	rows, _ := s.pool.Query(ctx, selectBoardListing, after, limit+1)
	list, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Listing, error) {
		var l Listing
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
