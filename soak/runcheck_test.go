package soak

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// soakRun is one run as Postgres has it.
type soakRun struct {
	ID, Board, State, Trigger, Reason string
	Number                            int
	Started, Ended                    time.Time
}

// checkRuns checks the runs' promises and returns their rows of the
// table: every slot the clock passed fired once, every card worked once
// per round, no review skipped, no card left unclaimed or held too long,
// every run's end said in its thread.
func checkRuns(t *testing.T, conn *pgx.Conn, d *runDriver, mdl *model, slk *slackAPI, rcv *receiver) [][2]string {
	t.Helper()
	ctx := context.Background()
	var rows [][2]string
	row := func(name string, v any) { rows = append(rows, [2]string{name, fmt.Sprint(v)}) }
	fail := func(format string, args ...any) { t.Errorf(format, args...) }

	rr, _ := conn.Query(ctx, `SELECT id, board_id, state, trigger, reason, number, started_at, coalesce(ended_at, now()) FROM runs ORDER BY started_at`)
	runs, err := pgx.CollectRows(rr, func(r pgx.CollectableRow) (soakRun, error) {
		var x soakRun
		err := r.Scan(&x.ID, &x.Board, &x.State, &x.Trigger, &x.Reason, &x.Number, &x.Started, &x.Ended)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	byBoard := map[string][]soakRun{}
	states := map[string]int{}
	for _, r := range runs {
		byBoard[r.Board] = append(byBoard[r.Board], r)
		states[r.State]++
		if r.State == "running" {
			fail("run %d of %s still running after the soak settled", r.Number, r.Board)
		}
	}
	row("runs done / stopped / timed out / still running", fmt.Sprintf("%d / %d / %d / %d", states["done"], states["stopped"], states["timed_out"], states["running"]))

	// Slots: what the clock passed, per board, against the runs started
	// on schedule or catching up and the slots skipped (a run going).
	shown := d.clock.times()
	var spring, autumn []time.Time
	for _, c := range shown {
		if c.Before(autumnStart) {
			spring = append(spring, c)
		} else {
			autumn = append(autumn, c)
		}
	}
	want := len(expectedSlots(springStart, spring[len(spring)-1]))
	if len(autumn) > 0 {
		want += 1 + len(expectedSlots(autumnStart, autumn[len(autumn)-1]))
	}
	var fired, sched, catchUp, skipped, lostOrDoubled int
	for _, b := range d.boards {
		var skips []time.Time
		sr, _ := conn.Query(ctx, `SELECT (detail->>'slot')::timestamptz FROM audit_events WHERE action = 'schedule_skipped' AND board_id = $1`, b.ID)
		skips, err := pgx.CollectRows(sr, pgx.RowTo[time.Time])
		if err != nil {
			t.Fatal(err)
		}
		distinct := map[int64]bool{}
		for _, s := range skips {
			if distinct[s.Unix()] {
				fail("board %s: slot %s skipped twice", b.Key, s.UTC().Format(time.RFC3339))
			}
			distinct[s.Unix()] = true
		}
		s, c := 0, 0
		for _, r := range byBoard[b.ID] {
			switch r.Trigger {
			case "schedule":
				s++
			case "catch_up":
				c++
			default:
				fail("board %s: run %d started by %s; only the schedule starts these", b.Key, r.Number, r.Trigger)
			}
		}
		n := s + c + len(skips)
		fired += n
		sched, catchUp, skipped = sched+s, catchUp+c, skipped+len(skips)
		if n != want {
			lostOrDoubled++
			fail("board %s (%s): the clock passed %d slots (the jump to autumn one), %d fired: %d runs on schedule, %d catching up, %d skipped",
				b.Key, b.Cron, want, n, s, c, len(skips))
		}
		if c > 1 {
			fail("board %s: %d catch-up runs; the clock jumped once", b.Key, c)
		}
	}
	d.mu.Lock()
	stalls := append([]string(nil), d.stalls...)
	lingered := append([]string(nil), d.lingered...)
	d.mu.Unlock()
	for _, s := range stalls {
		fail("scheduler late: %s", s)
	}
	row("fake clock hours shown (spring / autumn)", fmt.Sprintf("%d / %d", len(spring), len(autumn)))
	row("slots passed per board / boards", fmt.Sprintf("%d / %d", want, len(d.boards)))
	row("slots fired: run on schedule / catch-up / skipped (run going)", fmt.Sprintf("%d / %d / %d", sched, catchUp, skipped))
	row("boards with a slot lost or doubled / scheduler stalls", fmt.Sprintf("%d / %d", lostOrDoubled, len(stalls)))

	// Work: each round of each runner card kept one output at most, was
	// dispatched once (hooks), and called the model no more than its
	// attempts allow.
	type rc struct{ run, card, runner, handle, board string }
	type counts struct{ kept, sentBack, accepted int }
	cr, _ := conn.Query(ctx, `SELECT rc.run_id, rc.card_id, rc.runner, b.key || '-' || c.number, r.board_id,
    (SELECT count(*) FROM audit_events a WHERE a.action = 'card_changed' AND a.detail->>'card' = rc.card_id AND a.detail->>'via' = 'run'
        AND a.detail->'changes'->0->>'to' IN ('Review', 'Done') AND a.at BETWEEN r.started_at AND coalesce(r.ended_at, now())),
    (SELECT count(*) FROM audit_events a WHERE a.action = 'run_card_reviewed' AND a.detail->>'run_id' = rc.run_id AND a.detail->>'card' = rc.card_id AND a.detail->>'accepted' = 'false'),
    (SELECT count(*) FROM audit_events a WHERE a.action = 'run_card_reviewed' AND a.detail->>'run_id' = rc.run_id AND a.detail->>'card' = rc.card_id AND a.detail->>'accepted' = 'true'),
    rc.review,
    EXISTS (SELECT 1 FROM audit_events a WHERE a.action = 'card_changed' AND a.detail->>'card' = rc.card_id
        AND a.detail->'changes'->0->>'to' = 'Done' AND a.at BETWEEN r.started_at AND coalesce(r.ended_at, now()))
FROM run_cards rc JOIN runs r ON r.id = rc.run_id JOIN cards c ON c.id = rc.card_id JOIN boards b ON b.id = c.board_id
WHERE rc.runner <> ''`)
	type rcRow struct {
		rc
		counts
		review, done bool
	}
	cards, err := pgx.CollectRows(cr, func(r pgx.CollectableRow) (rcRow, error) {
		var x rcRow
		err := r.Scan(&x.run, &x.card, &x.runner, &x.handle, &x.board, &x.kept, &x.sentBack, &x.accepted, &x.review, &x.done)
		return x, err
	})
	if err != nil {
		t.Fatal(err)
	}
	rounds, doubleKept, noReview, doubleAccept, reviewed, sentBack := 0, 0, 0, 0, 0, 0
	for _, c := range cards {
		rounds += c.kept
		sentBack += c.sentBack
		reviewed += c.accepted
		if c.kept > c.sentBack+1 {
			doubleKept++
			fail("%s of run %s: %d outputs kept in %d rounds\n%s", c.handle, c.run, c.kept, c.sentBack+1, cardStory(conn, c.run, c.card, mdl, c.handle))
		}
		if c.review && c.done && c.accepted == 0 {
			noReview++
			fail("%s of run %s reached Done with no accept", c.handle, c.run)
		}
		if c.accepted > 1 {
			doubleAccept++
			fail("%s of run %s accepted %d times", c.handle, c.run, c.accepted)
		}
	}
	row("runner outputs kept / sent back / accepted", fmt.Sprintf("%d / %d / %d", rounds, sentBack, reviewed))
	row("rounds with two outputs kept", doubleKept)
	row("review cards Done without an accept / accepted twice", fmt.Sprintf("%d / %d", noReview, doubleAccept))
	d.mu.Lock()
	decisions, twice := 0, 0
	for _, n := range d.reviews {
		decisions += min(n, 1)
		if n > 1 {
			twice++
		}
	}
	d.mu.Unlock()
	row("review decisions sent (cards) / sent more than once", fmt.Sprintf("%d / %d", decisions, twice))

	// Model runner calls per run card and round: the run is the board's
	// run going at the call (one at a time per board).
	boardOfKey := map[string]string{}
	for _, b := range d.boards {
		boardOfKey[b.Key] = b.ID
	}
	// A call answered 500 is retried by the model client within the same
	// attempt (up to modelRetries times, backing off at most a few
	// seconds); the call after it, from the same replica for the same
	// card and round, is that retry, not a new attempt, until the
	// client has retried as often as it does.
	type cardRound struct {
		run, board, handle string
		round              int
	}
	type attempt struct {
		last    runnerCall // its latest call
		retries int
	}
	perRound := map[cardRound]int{}
	attempts := map[cardRound]map[string]*attempt{} // by replica
	budgetCalls, calls := 0, 0
	for _, c := range mdl.runnerCalls() {
		key, _, _ := strings.Cut(c.Handle, "-")
		bid := boardOfKey[key]
		if bid == "" {
			fail("a model runner call for %q, on no board of the soak", c.Handle)
			continue
		}
		for _, b := range d.boards {
			if b.ID == bid && b.Channel == budgetChannel {
				budgetCalls++
			}
		}
		run, near := "", ""
		for _, r := range byBoard[bid] {
			if !c.At.Before(r.Started) && !c.At.After(r.Ended) {
				run = r.ID
			}
			if !c.At.Before(r.Started.Add(-time.Second)) && !c.At.After(r.Ended.Add(time.Second)) {
				near = r.ID
			}
		}
		if run == "" {
			run = near
		}
		round := cardRound{run, bid, c.Handle, c.Round}
		calls++
		if attempts[round] == nil {
			attempts[round] = map[string]*attempt{}
		}
		if a := attempts[round][c.Replica]; a != nil && a.last.Failed && c.At.Sub(a.last.At) < modelRetryWindow && a.retries < modelRetries {
			a.last, a.retries = c, a.retries+1
			continue
		}
		attempts[round][c.Replica] = &attempt{last: c}
		perRound[round]++
	}
	most, tries := 0, 0
	for k, n := range perRound {
		most = max(most, n)
		tries += n
		if n > maxAttempts {
			var card string
			_ = conn.QueryRow(ctx, `SELECT c.id FROM cards c JOIN boards b ON b.id = c.board_id WHERE b.id = $1 AND b.key || '-' || c.number = $2`, k.board, k.handle).Scan(&card)
			fail("model runner called for %d attempts of round %d of %s in run %s; a round has %d attempts\n%s", n, k.round, k.handle, k.run, maxAttempts, cardStory(conn, k.run, card, mdl, k.handle))
		}
	}
	row("SIGKILLs of a replica while its runner worked a card", mdl.killedMidCard.Load())
	if len(perRound) > 0 {
		row("model runner calls / attempts per card round (mean / max)", fmt.Sprintf("%.2f / %.2f / %d", float64(calls)/float64(len(perRound)), float64(tries)/float64(len(perRound)), most))
	}
	if budgetCalls != 0 {
		fail("%d model runner calls for the board of the channel over its budget", budgetCalls)
	}

	// Hooks: one dispatch (one webhook-id) per run card and round.
	dispatches, outputs := rcv.dispatched()
	perDispatch := map[string]int{}
	for _, x := range dispatches {
		perDispatch[fmt.Sprintf("%s %s %d", x.Run, x.Card, x.Round)]++
	}
	doubleDispatch := 0
	for k, n := range perDispatch {
		if n > 1 {
			doubleDispatch++
			fail("card round %s dispatched %d times", k, n)
		}
	}
	answers := map[int]int{}
	for _, o := range outputs {
		answers[o.Status]++
	}
	row("hook dispatches / rounds dispatched twice", fmt.Sprintf("%d / %d", len(dispatches), doubleDispatch))
	row("hook outputs posted: 200 / 409 (run over) / other", fmt.Sprintf("%d / %d / %d", answers[200], answers[409], len(outputs)-answers[200]-answers[409]))

	// Leases.
	for _, l := range lingered {
		fail("%s (lease %s × %d attempts)", l, runLease, maxAttempts)
	}
	row("cards left unclaimed or held past lease × attempts", len(lingered))

	// Every run's end said in its thread; the budget channel's runs wait.
	type thread struct{ channel, ts string }
	threadOf := map[string]thread{}
	tr, _ := conn.Query(ctx, `SELECT id, channel, thread FROM boards`)
	for tr.Next() {
		var id, ch, ts string
		if tr.Scan(&id, &ch, &ts) == nil {
			threadOf[id] = thread{strings.TrimPrefix(ch, "slack:"), ts}
		}
	}
	tr.Close()
	msgs := slk.messages()
	said := func(b, prefix string) bool {
		th := threadOf[b]
		for _, m := range msgs {
			if m.Channel == th.channel && m.ThreadTS == th.ts && strings.HasPrefix(m.Text, prefix) {
				return true
			}
		}
		return false
	}
	unsaid, budgetRuns, budgetWaits := 0, 0, 0
	for _, r := range runs {
		if r.State == "running" {
			continue
		}
		word := map[string]string{"done": "done", "stopped": "stopped", "timed_out": "timed out"}[r.State]
		if !said(r.Board, fmt.Sprintf("Run %d %s", r.Number, word)) {
			unsaid++
			logs := grepLogs(d.w.replicas, r.ID, "board="+r.Board)
			var told []string
			for _, l := range logs {
				if strings.Contains(l, "run ended") || strings.Contains(l, "run news") {
					told = append(told, l)
				}
			}
			fail("run %d of %s ended %s; its thread never heard it\nreplicas said:\n%s", r.Number, r.Board, r.State, strings.Join(told, "\n"))
		}
		for _, b := range d.boards {
			if b.ID == r.Board && b.Channel == budgetChannel {
				budgetRuns++
				if r.State == "done" {
					fail("run %d of the over-budget board ended done", r.Number)
				}
				if said(r.Board, fmt.Sprintf("Run %d waits: this channel has used its model budget", r.Number)) {
					budgetWaits++
				}
			}
		}
	}
	row("runs ended with no message in their thread", unsaid)
	row("over-budget channel: runs / told they wait / model calls", fmt.Sprintf("%d / %d / %d", budgetRuns, budgetWaits, budgetCalls))
	return rows
}

// cardStory is what Postgres and the model saw of one card in one run,
// for a failure's message.
func cardStory(conn *pgx.Conn, run, card string, mdl *model, handle string) string {
	ctx := context.Background()
	var b strings.Builder
	var started, ended time.Time
	if card == "" {
		card = handle
	}
	_ = conn.QueryRow(ctx, `SELECT started_at, coalesce(ended_at, now()) FROM runs WHERE id = $1`, run).Scan(&started, &ended)
	fmt.Fprintf(&b, "run %s from %s to %s\n", run, started.Format(time.RFC3339Nano), ended.Format(time.RFC3339Nano))
	rows, err := conn.Query(ctx, `SELECT at, actor, action, detail::text FROM audit_events WHERE detail->>'card' = $1 AND at BETWEEN $2 AND $3 ORDER BY id`, card, started.Add(-time.Minute), ended.Add(time.Minute))
	if err == nil {
		for rows.Next() {
			var at time.Time
			var actor, action, detail string
			if rows.Scan(&at, &actor, &action, &detail) == nil {
				fmt.Fprintf(&b, "  %s %s %s %s\n", at.Format(time.RFC3339Nano), actor, action, detail)
			}
		}
		rows.Close()
	}
	for _, c := range mdl.runnerCalls() {
		if c.Handle == handle && !c.At.Before(started.Add(-time.Minute)) && !c.At.After(ended.Add(time.Minute)) {
			failed := ""
			if c.Failed {
				failed = " (answered 500)"
			}
			fmt.Fprintf(&b, "  model call %s round %d on %s%s\n", c.At.Format(time.RFC3339Nano), c.Round, c.Replica, failed)
		}
	}
	return b.String()
}
