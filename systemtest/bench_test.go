package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bobnet/bobnet/app"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// benchPlan is a 64-card plan whose cards form a chain: 63 links.
func benchPlan() plan.Envelope {
	a := plan.Action{Type: plan.ActionCreateBoardWithCards, Board: &plan.BoardDraft{Name: "Big board", Goal: "Benchmark"}}
	for i := range 64 {
		a.Cards = append(a.Cards, plan.CardDraft{
			TempID: fmt.Sprint("c", i), Title: fmt.Sprintf("Card number %d of the benchmark board", i),
			Body: "Do the thing this card is about, carefully, and say when it is done.", Assignee: "Coder",
			Status: "Backlog", WorkspaceMode: "Direct", AcceptanceCriteria: []string{"It works.", "It is tested."},
		})
		if i > 0 {
			a.Links = append(a.Links, plan.Link{Card: fmt.Sprint("c", i), DependsOn: fmt.Sprint("c", i-1)})
		}
	}
	return plan.Envelope{Kind: plan.KindProposeActions, Answer: "A big board.", Actions: []plan.Action{a}}
}

// benchServer is BobNet's HTTP handler on real Postgres and Redis, with
// the stores behind it to seed proposals directly.
type benchServer struct {
	url      string
	store    *store.Store
	proposal *redisstore.InFlight
	client   *http.Client
}

func newBenchServer(b testing.TB) *benchServer {
	b.Helper()
	prefix := bottest.Prefix()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	// Served as serve serves it, and stopped as serve stops it: the
	// server first, then the engine, which waits for the work a decision
	// leaves after its answer (recording it in Redis, the announcement),
	// then the pools. Closed under that work, the Redis client logged
	// into the benchmark's output and cut its result line.
	a := start(b, withEnv(map[string]string{"BOBNET_REDIS_PREFIX": prefix, "BOBNET_API_TOKEN": benchToken}), withLogger(func(app.Config) *slog.Logger { return logger }))
	store, err := store.Open(context.Background(), a.DB, logger)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(store.Close)
	return &benchServer{url: a.URL, store: store, proposal: redisstore.NewInFlight(bottest.Redis(b), prefix),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}}
}

// benchChannel is the console channel the benchmark's proposals are in;
// writeBaseline writes its boards there too.
var benchChannel = board.Channel{Source: board.SourceConsole, ID: "bench"}

// seed stores a pending 64-card proposal as the engine would.
func (s *benchServer) seed(b testing.TB, env plan.Envelope, planJSON []byte) board.ProposalID {
	b.Helper()
	ctx := context.Background()
	// An id of the shape the engine makes: the API refuses any other.
	id := board.ProposalID("p_" + strings.TrimPrefix(string(bot.NewRequestID()), "r_"))
	now := time.Now()
	p := board.Proposal{ID: id, Version: 1, RequestedBy: "alice", Thread: board.Thread{Channel: benchChannel},
		Plan: env, State: board.ProposalPending, CreatedAt: now, ExpiresAt: now.Add(time.Hour), Warnings: []plan.Issue{}}
	if err := s.store.SaveProposal(ctx, board.ProposalRecord{ID: id, Channel: benchChannel.Key(), RequestedBy: "alice", Plan: planJSON, ExpiresAt: p.ExpiresAt}); err != nil {
		b.Fatal(err)
	}
	if err := s.proposal.PutProposal(ctx, p); err != nil {
		b.Fatal(err)
	}
	return id
}

// benchToken is the API token of the benchmark's server: with a token,
// requests are not held to loopback host names.
const benchToken = "bench-token"

func (s *benchServer) approve(id board.ProposalID) (int, error) {
	req, _ := http.NewRequest("POST", s.url+"/api/v1/proposals/"+string(id)+"/approve", bytes.NewReader([]byte(`{"user":"alice"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+benchToken)
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func percentile(d []time.Duration, p int) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[(len(d)-1)*p/100].Microseconds()) / 1000
}

// BenchmarkApprove64 is one approve over the REST API, from the request to
// the committed 64-card board (63 links) and the answer: the claim and
// load in Redis, the one Postgres transaction, the proposal's new state.
func BenchmarkApprove64(b *testing.B) {
	s := newBenchServer(b)
	env := benchPlan()
	planJSON, _ := json.Marshal(env)
	var lat []time.Duration
	b.ReportAllocs()
	for range b.N {
		b.StopTimer()
		id := s.seed(b, env, planJSON)
		b.StartTimer()
		t0 := time.Now()
		code, err := s.approve(id)
		lat = append(lat, time.Since(t0))
		if err != nil || code != http.StatusOK {
			b.Fatalf("approve: %d, %v", code, err)
		}
	}
	b.ReportMetric(percentile(lat, 50), "p50-ms")
}

// BenchmarkApprove64Baseline is the floor beside Approve64: the bare
// minimum of an approve endpoint, timed by the same client. HTTP in, the
// pending plan read from Redis (one GET and its JSON decoded), one pgx
// batch transaction writing the same board, cards and links
// (writeBaseline), 200 out. What BobNet adds beyond it (token check,
// claim, policy, the compare-and-set, the audit and the outbox rows) is
// what the ratio measures.
func BenchmarkApprove64Baseline(b *testing.B) {
	rdb := bottest.Redis(b)
	pool := storetest.NewPool(b)
	prefix := bottest.Prefix()
	planJSON, _ := json.Marshal(benchPlan())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/proposals/"), "/approve")
		_, _ = io.Copy(io.Discard, r.Body)
		raw, err := rdb.Get(r.Context(), prefix+id).Bytes()
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		var env plan.Envelope
		if err := json.Unmarshal(raw, &env); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if err := writeBaseline(r.Context(), pool, env.Actions[0], id); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"state":"approved"}`))
	}))
	b.Cleanup(srv.Close)
	s := &benchServer{url: srv.URL, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}}
	ctx := context.Background()
	var lat []time.Duration
	b.ReportAllocs()
	for i := range b.N {
		b.StopTimer()
		id := board.ProposalID(fmt.Sprint("p_baseline_", i))
		if err := rdb.Set(ctx, prefix+string(id), planJSON, time.Hour).Err(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		code, err := s.approve(id)
		lat = append(lat, time.Since(t0))
		if err != nil || code != http.StatusOK {
			b.Fatalf("approve: %d, %v", code, err)
		}
	}
	b.ReportMetric(percentile(lat, 50), "p50-ms")
}

// writeBaseline writes the rows an approval of a proposal with action a
// writes, column for column (TestBaselineWritesTheRowsAnApprovalWrites):
// the board with its key, channel and proposal, each card with its
// criteria, skills, notes and proposal as data, and the links. So the
// baseline differs from an approval by BobNet's work, not by fewer bytes.
func writeBaseline(ctx context.Context, pool *pgxpool.Pool, a plan.Action, proposal string) error {
	boardID := board.NewBoardID()
	ids := map[string]board.CardID{}
	var cid, temp, title, body, assignee, status, mode, criteria, skills, notes []string
	var pos []int32
	for i, c := range a.Cards {
		id := board.NewCardID()
		ids[c.TempID] = id
		ac, _ := json.Marshal(append([]string{}, c.AcceptanceCriteria...))
		ss, _ := json.Marshal(append([]string{}, c.SuggestedSkills...))
		cid, temp, title, body = append(cid, string(id)), append(temp, c.TempID), append(title, c.Title), append(body, c.Body)
		assignee, status, mode, pos = append(assignee, c.Assignee), append(status, c.Status), append(mode, c.WorkspaceMode), append(pos, int32(i))
		criteria, skills, notes = append(criteria, string(ac)), append(skills, string(ss)), append(notes, c.Notes)
	}
	var from, to []string
	for _, l := range a.Links {
		from, to = append(from, string(ids[l.Card])), append(to, string(ids[l.DependsOn]))
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		batch := &pgx.Batch{}
		batch.Queue(`INSERT INTO boards (id, name, goal, key, channel, proposal_id, thread) VALUES ($1, $2, $3, bobnet_board_key(bobnet_tenant($5), $4), $5, $6, $7)`,
			boardID, a.Board.Name, a.Board.Goal, board.BoardKey(a.Board.Name), benchChannel.Key(), proposal, "")
		batch.Queue(`INSERT INTO cards (id, board_id, position, number, temp_id, title, body, assignee, status, workspace_mode,
    acceptance_criteria, suggested_skills, notes, proposal_id)
SELECT u.id, $1, u.pos, u.pos + 1, u.temp, u.title, u.body, u.assignee, u.status, u.mode, u.ac::jsonb, u.ss::jsonb, u.notes, $13
FROM unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[])
    AS u(id, pos, temp, title, body, assignee, status, mode, ac, ss, notes)`,
			boardID, cid, pos, temp, title, body, assignee, status, mode, criteria, skills, notes, proposal)
		batch.Queue(`INSERT INTO card_links (board_id, card_id, depends_on) SELECT $1, f, t FROM unnest($2::text[], $3::text[]) AS u(f, t)`, boardID, from, to)
		return tx.SendBatch(ctx, batch).Close()
	})
}

// TestBaselineWritesTheRowsAnApprovalWrites holds Approve64's baseline to
// the rows an approval writes: the same board, cards and links, every
// column but ids and times (and the number a board key takes to stay
// unique: BOAR, then BOAR2).
func TestBaselineWritesTheRowsAnApprovalWrites(t *testing.T) {
	s := newBenchServer(t)
	env := benchPlan()
	planJSON, _ := json.Marshal(env)
	id := s.seed(t, env, planJSON)
	if code, err := s.approve(id); err != nil || code != http.StatusOK {
		t.Fatalf("approve: %d, %v", code, err)
	}
	ctx := context.Background()
	if err := writeBaseline(ctx, s.store.Pool(), env.Actions[0], string(id)); err != nil {
		t.Fatal(err)
	}
	for table, q := range map[string]string{
		"boards": `SELECT name, goal, rtrim(key, '0123456789'), channel, coalesce(proposal_id, '<null>'), thread FROM boards`,
		"cards": `SELECT c.position, c.number, c.temp_id, c.title, c.body, c.assignee, c.status, c.workspace_mode,
    c.acceptance_criteria::text, c.suggested_skills::text, c.notes, coalesce(c.proposal_id, '<null>'), c.version, c.criteria_done::text
FROM cards c`,
		"card_links": `SELECT f.temp_id, d.temp_id FROM card_links l JOIN cards f ON f.id = l.card_id JOIN cards d ON d.id = l.depends_on`,
	} {
		rows, err := s.store.Pool().Query(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			seen[fmt.Sprint(vals)]++
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if len(seen) == 0 {
			t.Fatalf("%s: no rows", table)
		}
		// Each row appears twice: once from the approval, once from the
		// baseline.
		for row, n := range seen {
			if n != 2 {
				t.Errorf("%s: row %s written %d times; the approval and the baseline differ", table, row, n)
			}
		}
	}
}

// BenchmarkConcurrentApproves100 fires 100 approves of one proposal at
// once: exactly one creates the board, 99 are told it was approved. It
// reports the p99 of all the answers.
func BenchmarkConcurrentApproves100(b *testing.B) {
	s := newBenchServer(b)
	env := benchPlan()
	planJSON, _ := json.Marshal(env)
	var lat []time.Duration
	var mu sync.Mutex
	for range b.N {
		b.StopTimer()
		id := s.seed(b, env, planJSON)
		b.StartTimer()
		codes := map[int]int{}
		var wg sync.WaitGroup
		for range 100 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				code, err := s.approve(id)
				mu.Lock()
				defer mu.Unlock()
				lat = append(lat, time.Since(t0))
				if err != nil {
					b.Error(err)
				}
				codes[code]++
			}()
		}
		wg.Wait()
		if codes[http.StatusOK] != 1 || codes[http.StatusConflict] != 99 {
			b.Fatalf("answers = %v; want one 200 and 99 409", codes)
		}
	}
	b.StopTimer()
	var boards int
	if err := s.store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM boards").Scan(&boards); err != nil || boards != b.N {
		b.Fatalf("boards = %d, %v; want %d", boards, err, b.N)
	}
	b.ReportMetric(percentile(lat, 99), "p99-ms")
}
