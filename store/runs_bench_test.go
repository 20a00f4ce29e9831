package store_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// benchRunBoard is the 64-card chain board, approved once, that has run
// twenty times before, with its tables analyzed as autovacuum does in any
// deployment: without statistics, a database filled in a second plans the
// runner's claim as if the run tables were empty, which no board that
// runs daily sees.
func benchRunBoard(b *testing.B, s *store.Store) board.ID {
	b.Helper()
	ctx := context.Background()
	res, err := s.Execute(ctx, board.Execution{ProposalID: "p_runbench", Channel: "console:runbench", ApprovedBy: "bench", Plan: plan64x80()})
	if err != nil {
		b.Fatal(err)
	}
	for range 20 {
		r, err := s.StartRun(ctx, board.RunStart{Board: res.BoardID, User: "bench", Trigger: "manual", Deadline: time.Hour,
			Runners: plan.Runners{Others: plan.Runner{Name: "model"}}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.StopRun(ctx, r.ID, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := s.Pool().Exec(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
	return res.BoardID
}

// BenchmarkStartRun64 starts a run of the 64-card chain board and
// dispatches its first wave (the one card without dependencies) to the
// model runner.
func BenchmarkStartRun64(b *testing.B) {
	s := storetest.NewStore(b)
	id := benchRunBoard(b, s)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		r, err := s.StartRun(ctx, board.RunStart{Board: id, User: "bench", Trigger: "manual", Deadline: time.Hour,
			Runners: plan.Runners{Others: plan.Runner{Name: "model"}}})
		if err != nil {
			b.Fatal(err)
		}
		if _, ok, err := s.ClaimRunCard(ctx, "model", time.Minute); err != nil || !ok {
			b.Fatal(ok, err)
		}
		b.StopTimer()
		if _, err := s.StopRun(ctx, r.ID, "bench"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkStartRun64Baseline writes the same run rows with one bare pgx
// batch: the run, every card back to its starting status, the run's cards,
// and the first card taken.
func BenchmarkStartRun64Baseline(b *testing.B) {
	s := storetest.NewStore(b)
	id := benchRunBoard(b, s)
	pool := s.Pool()
	ctx := context.Background()
	_, cards, err := s.Board(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	var sql strings.Builder
	sql.WriteString(`INSERT INTO run_cards (run_id, card_id, runner, review) VALUES `)
	for i := range cards {
		if i > 0 {
			sql.WriteString(",")
		}
		fmt.Fprintf(&sql, "($1,$%d,'model',true)", i+2)
	}
	insertCards := sql.String()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		run := fmt.Sprintf("run_bench%022d", n)
		args := []any{run}
		for _, c := range cards {
			args = append(args, c.ID)
		}
		batch := &pgx.Batch{}
		batch.Queue(`BEGIN`)
		batch.Queue(`INSERT INTO runs (id, board_id, number, state, started_by, deadline) VALUES ($1, $2, $3, 'running', 'bench', now() + interval '1 hour')`, run, id, n+100000)
		batch.Queue(`UPDATE cards c SET status = CASE WHEN EXISTS (SELECT 1 FROM card_links l WHERE l.card_id = c.id) THEN 'Backlog' ELSE 'Ready' END, version = version + 1 WHERE board_id = $1`, id)
		batch.Queue(insertCards, args...)
		batch.Queue(`UPDATE run_cards SET lease_until = now() + interval '1 minute', attempts = 1 WHERE run_id = $1 AND card_id = $2`, run, cards[0].ID)
		batch.Queue(`COMMIT`)
		if err := pool.SendBatch(ctx, batch).Close(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if _, err := pool.Exec(ctx, `UPDATE runs SET state = 'stopped', ended_at = now() WHERE id = $1`, run); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
