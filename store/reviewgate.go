package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

// The running run of a card's board, when the card is one of its cards,
// and whether a runner's output of it waits for a review.
const cardRunningRun = `SELECT r.id, r.number, rc.runner <> '' AND rc.review FROM runs r JOIN run_cards rc ON rc.run_id = r.id AND rc.card_id = $2
WHERE r.board_id = $1 AND r.state = 'running'`

// reviewGate refuses to move cur to status while a run of its board that
// has it is running, when the move would skip a review: out of Review
// (any card: it moves on only through its review), or to Done for a card
// whose runner's output is reviewed (it reaches Done only through its
// review). The review (ReviewRunCard) is what the channel's policy
// guards, so no one skips it from anywhere (the API, the board page,
// chat, the App Home, an approved plan). The caller holds the card's row,
// so the check and the change it allows cannot be raced by another
// change of the card.
func reviewGate(ctx context.Context, q querier, cur board.Card, status string) error {
	if status == cur.Status || cur.Status != "Review" && status != "Done" {
		return nil
	}
	var run board.RunID
	var n int
	var reviewed bool
	err := q.QueryRow(ctx, cardRunningRun, cur.BoardID, cur.ID).Scan(&run, &n, &reviewed)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("the run of card %s: %w", cur.ID, err)
	case cur.Status != "Review" && !reviewed:
		return nil
	}
	return &board.ReviewGateError{Card: cur, Run: run, Number: n}
}
