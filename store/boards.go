package store

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	selectBoard = `SELECT id, name, goal, key, channel, thread, created_at FROM boards WHERE id = $1`

	selectCards = `SELECT c.id, c.board_id, c.title, c.body, c.assignee, c.status, c.workspace_mode, c.acceptance_criteria,
    c.suggested_skills, c.notes, c.number, c.version, c.criteria_done, b.key || '-' || c.number
FROM cards c JOIN boards b ON b.id = c.board_id WHERE c.board_id = $1 ORDER BY c.number`

	selectLinks = `SELECT card_id, depends_on FROM card_links WHERE board_id = $1 ORDER BY card_id, depends_on`
)

// Board returns a board with its cards in plan order, each with the ids of
// the cards it depends on. ErrNotFound when there is no such board.
func (s *Store) Board(ctx context.Context, id board.ID) (board.Board, []board.Card, error) {
	var b board.Board
	batch := &pgx.Batch{}
	batch.Queue(selectBoard, id)
	batch.Queue(selectCards, id)
	batch.Queue(selectLinks, id)
	br := s.pool.SendBatch(ctx, batch)
	defer br.Close()
	if err := br.QueryRow().Scan(&b.ID, &b.Name, &b.Goal, &b.Key, &b.Channel, &b.Thread, &b.CreatedAt); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return board.Board{}, nil, fmt.Errorf("board %s: %w", id, board.ErrNotFound)
		}
		return board.Board{}, nil, fmt.Errorf("board %s: %w", id, err)
	}
	rows, _ := br.Query()
	cards, err := pgx.CollectRows(rows, scanCard)
	if err != nil {
		return board.Board{}, nil, fmt.Errorf("cards of board %s: %w", id, err)
	}
	byID := make(map[board.CardID]*board.Card, len(cards))
	for i := range cards {
		byID[cards[i].ID] = &cards[i]
	}
	rows, _ = br.Query()
	var card, dep board.CardID
	_, err = pgx.ForEachRow(rows, []any{&card, &dep}, func() error {
		if c := byID[card]; c != nil {
			c.DependsOn = append(c.DependsOn, dep)
		}
		return nil
	})
	if err != nil {
		return board.Board{}, nil, fmt.Errorf("links of board %s: %w", id, err)
	}
	return b, cards, nil
}

// Status summarizes a board: counts by status (every status, zeros
// included), cards waiting on an unfinished dependency, and cards ready to
// start (not started, every dependency done). ErrNotFound when there is no
// such board.
func (s *Store) Status(ctx context.Context, id board.ID) (board.Status, error) {
	b, cards, err := s.Board(ctx, id)
	if err != nil {
		return board.Status{}, err
	}
	return board.Summarize(b, cards), nil
}

const selectChannelBoard = `SELECT b.id, b.name, b.goal, b.key, b.channel, b.thread, b.created_at
FROM channel_bindings cb JOIN boards b ON b.id = cb.board_id WHERE cb.channel = $1`

// ChannelBoard returns the channel's current board: the one its binding
// names, which is the board most recently created in (or bound to) the
// channel. It is the one answer to "which board is this channel's" that
// status, card commands, planning and execution all use. ErrNotFound when
// the channel has none.
func (s *Store) ChannelBoard(ctx context.Context, channel string) (board.Board, error) {
	var b board.Board
	err := s.pool.QueryRow(ctx, selectChannelBoard, channel).Scan(&b.ID, &b.Name, &b.Goal, &b.Key, &b.Channel, &b.Thread, &b.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return board.Board{}, fmt.Errorf("board of channel %s: %w", channel, board.ErrNotFound)
	}
	if err != nil {
		return board.Board{}, fmt.Errorf("board of channel %s: %w", channel, err)
	}
	return b, nil
}

const selectBoardByKey = `SELECT id, name, goal, key, channel, thread, created_at FROM boards WHERE tenant = $1 AND key = upper($2)`

// BoardByKey finds a tenant's board by its key (NEWS, any case), unique
// within the tenant. ErrNotFound when none of the tenant's boards has it,
// whatever other tenants have.
func (s *Store) BoardByKey(ctx context.Context, tenant board.Tenant, key string) (board.Board, error) {
	var b board.Board
	err := s.pool.QueryRow(ctx, selectBoardByKey, tenant, strings.TrimSpace(key)).Scan(&b.ID, &b.Name, &b.Goal, &b.Key, &b.Channel, &b.Thread, &b.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return board.Board{}, fmt.Errorf("board %s: %w", key, board.ErrNotFound)
	}
	if err != nil {
		return board.Board{}, fmt.Errorf("board %s: %w", key, err)
	}
	return b, nil
}

// BindChannel makes id the channel's current board. ErrNotFound when there
// is no such board.
func (s *Store) BindChannel(ctx context.Context, channel string, id board.ID) error {
	_, err := s.pool.Exec(ctx, upsertBinding, channel, id)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23503" {
		return fmt.Errorf("bind %s to board %s: %w", channel, id, board.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("bind %s to board %s: %w", channel, id, err)
	}
	return nil
}

// BoardSummary describes a board for the planner's prompt: name, goal,
// counts by status and up to 40 cards that are not done; and, for
// validating changes to it, every card with its handle and dependencies.
func (s *Store) BoardSummary(ctx context.Context, id board.ID) (plan.BoardSummary, error) {
	b, cards, err := s.Board(ctx, id)
	if err != nil {
		return plan.BoardSummary{}, err
	}
	st := board.Summarize(b, cards)
	sum := plan.BoardSummary{ID: string(b.ID), Name: b.Name, Goal: b.Goal, Counts: map[string]int{}}
	for k, v := range st.Counts {
		if v > 0 {
			sum.Counts[k] = v
		}
	}
	sum.State = &plan.BoardState{Name: b.Name, Key: b.Key}
	for _, c := range cards {
		cs := plan.CardSummary{ID: string(c.ID), Handle: c.Handle, Title: c.Title, Status: c.Status, Assignee: c.Assignee}
		for _, d := range c.DependsOn {
			cs.DependsOn = append(cs.DependsOn, string(d))
		}
		sum.State.Cards = append(sum.State.Cards, cs)
		if c.Status != "Done" && len(sum.Cards) < 40 {
			sum.Cards = append(sum.Cards, cs)
		}
	}
	return sum, nil
}
