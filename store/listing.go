package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

const selectBoardListing = `SELECT b.id, b.name, b.key, b.channel, b.created_at,
    coalesce((SELECT jsonb_object_agg(status, n) FROM (SELECT status, count(*) AS n FROM cards WHERE board_id = b.id GROUP BY status) c), '{}')
FROM boards b
WHERE ($1 = '' OR (b.created_at, b.id) < (SELECT created_at, id FROM boards WHERE id = $1 AND (NOT $3 OR channel LIKE ANY ($4::text[]))))
  AND (NOT $3 OR b.channel LIKE ANY ($4::text[]))
ORDER BY b.created_at DESC, b.id DESC LIMIT $2`

// Boards lists boards, newest first, limit at a time: after is the last
// board of the previous page ("" for the first). next is the board to
// continue after, "" on the last page. within, when not nil, keeps only
// the boards of the channels it matches: each an exact channel key or a
// prefix ending in * (an API token's channel patterns); a board after
// names outside them is taken for an unknown one (an empty page).
func (s *Store) Boards(ctx context.Context, after board.ID, limit int, within []string) (list []board.Listing, next board.ID, err error) {
	likes := make([]string, len(within))
	for i, p := range within {
		likes[i] = likePattern(p)
	}
	rows, _ := s.pool.Query(ctx, selectBoardListing, after, limit+1, within != nil, likes)
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

// likeEscaper escapes what LIKE reads as wildcards, and its escape.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// likePattern is a channel pattern as a LIKE pattern: the channel key
// itself, or, for a prefix ending in *, the prefix followed by anything.
func likePattern(p string) string {
	if prefix, ok := strings.CutSuffix(p, "*"); ok {
		return likeEscaper.Replace(prefix) + "%"
	}
	return likeEscaper.Replace(p)
}
