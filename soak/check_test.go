package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func connect(t *testing.T, svc *services) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), svc.databaseURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// pendingDeliveries counts events the outbox has neither delivered nor
// given up on.
func pendingDeliveries(t *testing.T, svc *services) int {
	conn := connect(t, svc)
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM event_outbox WHERE delivered_at IS NULL AND failed_at IS NULL`).Scan(&n); err != nil {
		t.Logf("pending deliveries: %v", err)
		return -1
	}
	return n
}

// check compares what the clients saw with what BobNet wrote and sent,
// and prints the figures as a table, extra (the faults' own figures)
// last.
func check(t *testing.T, svc *services, replicas []*replica, mdl *model, slk *slackAPI, rcv *receiver, led *ledger, runs *runDriver, extra [][2]string) {
	t.Helper()
	ctx := context.Background()
	api := replicas[0]
	conn := connect(t, svc)
	var rows [][2]string
	row := func(name string, v any) { rows = append(rows, [2]string{name, fmt.Sprint(v)}) }
	fail := func(format string, args ...any) { t.Errorf(format, args...) }

	// Requests: each acknowledged one answered, with at most one proposal.
	counts := map[string]int{}
	for _, rq := range led.requests {
		counts[rq.Via]++
		var proposed int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE action = 'proposed' AND detail->>'request_id' = $1`, rq.ID).Scan(&proposed); err != nil {
			t.Fatal(err)
		}
		if proposed > 1 {
			fail("request %s (%s) made %d proposals", rq.ID, rq.Tag, proposed)
		}
	}
	row("requests acknowledged (console / hook / revise)", fmt.Sprintf("%d / %d / %d", counts["console"], counts["hook"], counts["revise"]))
	var unanswered int
	for _, rq := range led.requests {
		code, out := api.call(ctx, "GET", "/api/v1/requests/"+rq.ID, nil)
		if code != 200 || (out["state"] != "done" && out["state"] != "failed") {
			unanswered++
			logs := grepLogs(replicas, rq.ID)
			fail("request %s (%s) acknowledged, not answered: %d %v\nreplicas said:\n%s", rq.ID, rq.Tag, code, out["state"], strings.Join(logs, "\n"))
		}
	}
	row("requests not answered", unanswered)

	// Slack: one answer in each acknowledged mention's thread, one
	// preview per proposal.
	msgs := slk.messages()
	perThread := map[string]int{}
	previews := map[string]int{}
	for _, m := range msgs {
		if m.ThreadTS != "" {
			perThread[m.ThreadTS]++
		}
		if m.Proposal != "" {
			previews[m.Proposal]++
		}
	}
	answeredOnce, answeredTwice, notAnswered := 0, 0, 0
	for _, m := range led.mentions {
		switch n := perThread[m.TS]; {
		case n == 1:
			answeredOnce++
		case n == 0:
			notAnswered++
			logs := grepLogs(replicas, m.Tag, m.TS, "Ev"+strings.TrimLeft(strings.TrimPrefix(m.TS, "1800000000."), "0"))
			fail("mention %s (%s) acknowledged, never answered\nreplicas said:\n%s", m.TS, m.Tag, strings.Join(logs, "\n"))
		default:
			answeredTwice++
			var said, words []string
			for _, msg := range msgs {
				if msg.ThreadTS == m.TS {
					said = append(said, fmt.Sprintf("%q (preview of %q)", msg.Text, msg.Proposal))
					words = append(words, msg.Proposal)
				}
			}
			logs := grepLogs(replicas, append(words, m.Tag, m.TS)...)
			fail("mention %s (%s) answered %d times: %s\nreplicas said:\n%s", m.TS, m.Tag, n, strings.Join(said, "; "), strings.Join(logs, "\n"))
		}
	}
	row("slack mentions acknowledged", len(led.mentions))
	row("slack mentions answered once / more / never", fmt.Sprintf("%d / %d / %d", answeredOnce, answeredTwice, notAnswered))
	maxPreviews := 0
	for p, n := range previews {
		maxPreviews = max(maxPreviews, n)
		if n > 1 {
			fail("proposal %s previewed %d times in Slack", p, n)
		}
	}
	row("slack previews per proposal (max)", maxPreviews)

	// Proposals: approved ones have exactly one board equal to the plan;
	// no other has a board.
	type prop struct {
		id, state string
		plan      []byte
		boards    int
	}
	var props []prop
	r, err := conn.Query(ctx, `SELECT p.id, p.state, p.plan, (SELECT count(*) FROM boards b WHERE b.proposal_id = p.id) FROM proposals p`)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		var p prop
		if err := r.Scan(&p.id, &p.state, &p.plan, &p.boards); err != nil {
			t.Fatal(err)
		}
		props = append(props, p)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	byState := map[string]int{}
	for _, p := range props {
		byState[p.state]++
		switch {
		case p.state == "approved" && p.boards != 1:
			fail("approved proposal %s has %d boards", p.id, p.boards)
		case p.state != "approved" && p.boards != 0:
			fail("%s proposal %s has %d boards", p.state, p.id, p.boards)
		case p.state == "approved":
			if want, got := planTitles(t, p.plan), boardTitles(t, conn, p.id); !slices.Equal(want, got) {
				fail("proposal %s: board cards %q, previewed plan %q", p.id, got, want)
			}
		}
	}
	row("proposals pending / approved / cancelled / superseded / expired", fmt.Sprintf("%d / %d / %d / %d / %d",
		byState["pending"], byState["approved"], byState["cancelled"], byState["superseded"], byState["expired"]))
	var orphans int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM boards WHERE proposal_id IS NULL OR proposal_id NOT IN (SELECT id FROM proposals WHERE state = 'approved')`).Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 {
		fail("%d boards without an approved proposal", orphans)
	}
	row("boards without an approved proposal", orphans)

	// Answers: nothing answered both approved and cancelled; what was
	// answered is what the database says.
	state := map[string]string{}
	for _, p := range props {
		state[p.id] = p.state
	}
	both, wrong := 0, 0
	for p, what := range led.decided {
		switch {
		case what == "both":
			both++
			fail("proposal %s answered 200 both to approve and to cancel", p)
		case state[p] != what:
			wrong++
			fail("proposal %s answered %s, is %s", p, what, state[p])
		}
	}
	races := 0
	for _, rc := range led.races {
		if rc.Approve == 200 || rc.Cancel == 200 {
			races++
		}
	}
	row("approve/cancel races decided", fmt.Sprintf("%d of %d", races, len(led.races)))
	row("proposals answered both ways / unlike the database", fmt.Sprintf("%d / %d", both, wrong))

	// Events: every outbox row delivered under its one webhook-id, each
	// proposal's created before its decision at the receiver.
	got, bad := rcv.deliveries()
	if bad != 0 {
		fail("%d callbacks did not verify", bad)
	}
	idsOf := map[string]map[string]bool{} // type/proposal -> ids
	seen := map[string]bool{}
	firstAt := map[string]int{}
	for i, c := range got {
		seen[c.ID] = true
		if !strings.HasPrefix(c.Type, "proposal.") {
			continue // about cards and runs: the runs' checks count dispatches
		}
		k := c.Type + "/" + c.Proposal
		if idsOf[k] == nil {
			idsOf[k] = map[string]bool{}
			firstAt[k] = i
		}
		idsOf[k][c.ID] = true
	}
	multi, outOfOrder := 0, 0
	for k, ids := range idsOf {
		if len(ids) > 1 {
			multi++
			fail("event %s delivered under %d webhook-ids", k, len(ids))
		}
	}
	for k, i := range firstAt {
		typ, p, _ := cut(k)
		if typ == "proposal.created" {
			continue
		}
		if j, ok := firstAt["proposal.created/"+p]; ok && j > i {
			outOfOrder++
			fail("%s reached the receiver before proposal.created", k)
		}
	}
	var outbox, delivered, failed int
	undelivered := 0
	er, err := conn.Query(ctx, `SELECT msg_id, delivered_at IS NOT NULL, failed_at IS NOT NULL FROM event_outbox`)
	if err != nil {
		t.Fatal(err)
	}
	for er.Next() {
		var id string
		var d, f bool
		if err := er.Scan(&id, &d, &f); err != nil {
			t.Fatal(err)
		}
		outbox++
		if d {
			delivered++
		}
		if f {
			failed++
		}
		if !seen[id] {
			undelivered++
		}
	}
	if undelivered != 0 || failed != 0 {
		fail("events: %d never reached the receiver, %d given up", undelivered, failed)
	}
	row("events written / delivered / given up / never received", fmt.Sprintf("%d / %d / %d / %d", outbox, delivered, failed, undelivered))
	row("events under several webhook-ids / out of order", fmt.Sprintf("%d / %d", multi, outOfOrder))

	// Model calls per request (retries of failed calls included).
	calls, most := 0, 0
	tags := map[string]bool{}
	for _, rq := range led.requests {
		if rq.Via != "revise" {
			tags[rq.Tag] = true
		}
	}
	for _, m := range led.mentions {
		tags[m.Tag] = true
	}
	for tag := range tags {
		n := mdl.callsFor(tag)
		calls += n
		most = max(most, n)
	}
	if len(tags) > 0 {
		row("model calls per request (mean / max)", fmt.Sprintf("%.2f / %d", float64(calls)/float64(len(tags)), most))
	}
	rows = append(rows, checkRuns(t, conn, runs, mdl, slk, rcv)...)
	rows = append(rows, extra...)
	t.Logf("soak figures:\n%s", table(rows))
}

func cut(k string) (string, string, bool) {
	for i := range k {
		if k[i] == '/' {
			return k[:i], k[i+1:], true
		}
	}
	return k, "", false
}

// planTitles are the card titles a stored plan creates, in order.
func planTitles(t *testing.T, plan []byte) []string {
	var env struct {
		Actions []struct {
			Cards []struct {
				Title string `json:"title"`
			} `json:"cards"`
		} `json:"actions"`
	}
	if err := json.Unmarshal(plan, &env); err != nil {
		t.Fatalf("stored plan: %v", err)
	}
	var out []string
	for _, a := range env.Actions {
		for _, c := range a.Cards {
			out = append(out, c.Title)
		}
	}
	return out
}

func boardTitles(t *testing.T, conn *pgx.Conn, proposal string) []string {
	rows, _ := conn.Query(context.Background(), `SELECT c.title FROM cards c JOIN boards b ON b.id = c.board_id WHERE b.proposal_id = $1 ORDER BY c.number`, proposal)
	titles, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return titles
}
