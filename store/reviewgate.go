package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

// The running run of a card's board, when the card is one of its
// cards.
const cardRunningRun = `SELECT r.id, r.number FROM runs r JOIN run_cards rc ON rc.run_id = r.id AND rc.card_id = $2
WHERE r.board_id = $1 AND r.state = 'running'`

// reviewGate refuses to move cur, a card in Review, while a run of its
// board that has it is running: such a card moves on only through its
// review (ReviewRunCard), which the channel's policy guards, whoever asks
// and from wherever (the API, the board page, chat, the App Home, an
// approved plan). The caller holds the card's row, so the check and the
// change it allows cannot be raced by another change of the card.
func reviewGate(ctx context.Context, q querier, cur board.Card) error {
	var run board.RunID
	var n int
	err := q.QueryRow(ctx, cardRunningRun, cur.BoardID, cur.ID).Scan(&run, &n)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("the run of card %s: %w", cur.ID, err)
	}
	return &board.ReviewGateError{Card: cur, Run: run, Number: n}
}
