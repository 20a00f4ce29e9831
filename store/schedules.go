package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bobnet/bobnet/board"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	upsertSchedule = `INSERT INTO schedules (board_id, cron, timezone, set_by, last_slot) VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (board_id) DO UPDATE SET cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, set_by = EXCLUDED.set_by, last_slot = EXCLUDED.last_slot`
	deleteSchedule  = `DELETE FROM schedules WHERE board_id = $1`
	selectSchedules = `SELECT board_id, cron, timezone, set_by, last_slot FROM schedules`
	advanceSchedule = `UPDATE schedules SET last_slot = $3 WHERE board_id = $1 AND last_slot = $2`
)

// SetSchedule sets (or replaces) a board's schedule, counting slots from
// now on; the caller has checked cron and time zone. ErrNotFound without
// such a board.
func (s *Store) SetSchedule(ctx context.Context, sc board.Schedule) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, upsertSchedule, sc.Board, sc.Cron, sc.Timezone, sc.SetBy, sc.LastSlot); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "23503" {
				return fmt.Errorf("board %s: %w", sc.Board, board.ErrNotFound)
			}
			return err
		}
		_, err := tx.Exec(ctx, insertRunAu, sc.SetBy, "schedule_set", scheduleDetail(sc), sc.Board)
		return err
	})
	if err != nil {
		return fmt.Errorf("schedule %s: %w", sc.Board, err)
	}
	return nil
}

// DeleteSchedule removes a board's schedule; ErrNotFound when it had
// none.
func (s *Store) DeleteSchedule(ctx context.Context, id board.ID, user string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, deleteSchedule, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return board.ErrNotFound
		}
		_, err = tx.Exec(ctx, insertRunAu, user, "schedule_removed", []byte(`{}`), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("schedule of %s: %w", id, err)
	}
	return nil
}

// Schedules lists every board's schedule.
func (s *Store) Schedules(ctx context.Context) ([]board.Schedule, error) {
	rows, _ := s.pool.Query(ctx, selectSchedules)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[board.Schedule])
	if err != nil {
		return nil, fmt.Errorf("schedules: %w", err)
	}
	return out, nil
}

// ScheduleOf reads one board's schedule; ErrNotFound when it has none.
func (s *Store) ScheduleOf(ctx context.Context, id board.ID) (board.Schedule, error) {
	rows, _ := s.pool.Query(ctx, selectSchedules+` WHERE board_id = $1`, id)
	sc, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[board.Schedule])
	if errors.Is(err, pgx.ErrNoRows) {
		return board.Schedule{}, fmt.Errorf("schedule of %s: %w", id, board.ErrNotFound)
	}
	if err != nil {
		return board.Schedule{}, fmt.Errorf("schedule of %s: %w", id, err)
	}
	return sc, nil
}

// FireSchedule fires a schedule's slot: in one transaction it moves the
// schedule's last slot from from to to, if no one has moved it since, and
// starts the run st asks for. won is false when another replica moved it
// first (nothing is done); so a slot fires once however many replicas see
// it due, and a failure or crash before the commit leaves the slot due.
// When the board's previous run is still going the slot is spent without
// a run: won is true and the error ErrRunGoing, and the skip is audited.
func (s *Store) FireSchedule(ctx context.Context, id board.ID, from, to time.Time, st board.RunStart) (run board.Run, won bool, err error) {
	var skipped error
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, advanceSchedule, id, from, to)
		if err != nil {
			return fmt.Errorf("advance the schedule of %s: %w", id, err)
		}
		if won = tag.RowsAffected() == 1; !won {
			return nil
		}
		// The start in a savepoint, so a run still going spends the slot
		// (the advance stands) and everything else undoes it.
		err = pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			b := &pgx.Batch{}
			runID := board.NewRunID()
			started := queueStartRun(b, runID, st)
			run, err = started.result(st, runID, sp.SendBatch(ctx, b).Close())
			return err
		})
		if !errors.Is(err, board.ErrRunGoing) {
			return err
		}
		skipped = err
		detail, _ := json.Marshal(map[string]any{"slot": to, "why": "the previous run is still going"})
		if _, err := tx.Exec(ctx, insertRunAu, st.User, "schedule_skipped", detail, id); err != nil {
			return fmt.Errorf("audit the skipped slot: %w", err)
		}
		return nil
	})
	if err != nil {
		return board.Run{}, false, fmt.Errorf("fire the schedule of %s: %w", id, err)
	}
	return run, won, skipped
}

func scheduleDetail(sc board.Schedule) []byte {
	b, _ := json.Marshal(map[string]any{"cron": sc.Cron, "timezone": sc.Timezone})
	return b
}
