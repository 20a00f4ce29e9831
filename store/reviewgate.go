package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
)

// The review gate, and the review decision, the one way through it.

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

const (
	// The card's row is locked too: a review waiting on another then reads
	// the card's status as that one left it, so two accepts decide once.
	reviewRunCard = `SELECT rc.rounds, c.status FROM run_cards rc JOIN runs r ON r.id = rc.run_id JOIN cards c ON c.id = rc.card_id
WHERE rc.run_id = $1 AND rc.card_id = $2 AND r.state = 'running' FOR UPDATE OF rc, c`
	sendBack = `UPDATE run_cards SET rounds = rounds + 1, feedback = $3, attempts = 0, finished_at = NULL WHERE run_id = $1 AND card_id = $2 AND rounds = $4`
)

// ReviewRunCard accepts a card in Review (it goes to Done) or sends it
// back with a reason (to Ready, worked again with the reason; at most
// three times). round is the round the decision was shown (the card's
// Rounds when its output was announced), or board.AnyRound. The card's
// row is locked and its round compared in the decision's transaction, so
// a decision on an earlier round changes nothing: ErrStaleReview.
// ErrNotRunnable when the card is not in Review of a running run or was
// sent back three times already.
func (s *Store) ReviewRunCard(ctx context.Context, run board.RunID, card board.CardID, round int, user string, accept bool, reason string) (board.CardUpdate, error) {
	var up board.CardUpdate
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var rounds int
		var status string
		if err := tx.QueryRow(ctx, reviewRunCard, run, card).Scan(&rounds, &status); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: no such card in a running run", board.ErrNotRunnable)
		} else if err != nil {
			return err
		}
		if round != board.AnyRound && rounds != round {
			return fmt.Errorf("round %d, the card is in round %d: %w", round, rounds, board.ErrStaleReview)
		}
		if status != "Review" {
			return fmt.Errorf("%w: the card is in %s, not Review", board.ErrNotRunnable, status)
		}
		next := "Done"
		if !accept {
			if rounds >= maxRounds {
				return fmt.Errorf("%w: the card was sent back %d times already; accept it or stop the run", board.ErrNotRunnable, maxRounds)
			}
			// The row is locked since the read; its round is compared
			// again all the same, so the send back moves only the round
			// it was decided on.
			tag, err := tx.Exec(ctx, sendBack, run, card, reason, rounds)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return fmt.Errorf("round %d: %w", rounds, board.ErrStaleReview)
			}
			next = "Ready"
		}
		var err error
		up, err = changeCardAs(ctx, tx, board.CardChange{Card: card, Actor: user, Via: "review", Status: &next}, true)
		if err != nil {
			return err
		}
		detail, _ := json.Marshal(map[string]any{"run_id": run, "card": card, "accepted": accept, "reason": reason})
		_, err = tx.Exec(ctx, insertRunAu, user, "run_card_reviewed", detail, up.Card.BoardID)
		return err
	})
	if err != nil {
		return board.CardUpdate{}, fmt.Errorf("review %s in run %s: %w", card, run, err)
	}
	return up, nil
}
