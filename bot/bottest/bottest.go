// Package bottest builds a real engine for integration tests: real Postgres
// (a fresh database), real Redis (a fresh key prefix), the scripted model
// server, and a poster that records what the engine said. Tests skip only
// when DATABASE_URL or REDIS_URL is unset; `make test` sets both.
//
// BOBNET_TEST_REDIS_MODE=cluster runs the same tests on the Redis Cluster
// of REDIS_CLUSTER_URL, sentinel on the sentinel set of
// REDIS_SENTINEL_URL (scripts/rediscluster.sh starts both; scripts/test.sh
// runs the engine's tests on the cluster too).
package bottest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/redisstore"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store"
	"github.com/bobnet/bobnet/store/storetest"
)

// Env is a running engine and what it is made of.
type Env struct {
	Engine *bot.Engine
	Store  *store.Store
	Redis  redis.UniversalClient
	Queue  *redisstore.Queue // the engine's request stream
	Prefix string
	Model  *plannertest.Server
	Poster *Poster
	Cancel context.CancelFunc // stops the engine's workers
	done   chan struct{}
}

// RedisMode is the mode the tests reach Redis in: BOBNET_TEST_REDIS_MODE,
// single by default.
func RedisMode(t testing.TB) redisstore.Mode {
	t.Helper()
	m, err := redisstore.ParseMode(os.Getenv("BOBNET_TEST_REDIS_MODE"))
	if err != nil {
		t.Fatalf("BOBNET_TEST_REDIS_MODE: %v", err)
	}
	return m
}

// redisURLs names the variable of each mode's URL.
var redisURLs = map[redisstore.Mode]string{
	redisstore.ModeSingle: "REDIS_URL", redisstore.ModeCluster: "REDIS_CLUSTER_URL", redisstore.ModeSentinel: "REDIS_SENTINEL_URL",
}

// Redis returns a client in RedisMode on its URL (REDIS_URL,
// REDIS_CLUSTER_URL or REDIS_SENTINEL_URL), skipping the test when it is
// unset.
func Redis(t testing.TB) redis.UniversalClient {
	t.Helper()
	return RedisIn(t, RedisMode(t))
}

// RedisIn returns a client in mode m, whatever BOBNET_TEST_REDIS_MODE
// says: for the tests of one mode.
func RedisIn(t testing.TB, m redisstore.Mode) redis.UniversalClient {
	t.Helper()
	env := redisURLs[m]
	u := os.Getenv(env)
	if u == "" {
		t.Skip(env + " is not set; `make test` starts Redis and sets it")
	}
	opts, err := redisstore.ParseURL(m, u)
	if err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	c := redisstore.Connect(opts, 8)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Layout is the store's layout for a test's prefix in RedisMode.
func Layout(t testing.TB, prefix string) redisstore.Layout {
	t.Helper()
	return redisstore.Layout{Prefix: prefix, Mode: RedisMode(t)}
}

// Prefix returns a fresh Redis key prefix for one test.
func Prefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "bobnet-test-" + hex.EncodeToString(b)
}

// Option sets one part of the engine New starts, or changes its config.
type Option func(*setup)

// setup is what New starts an engine on.
type setup struct {
	store   *store.Store
	rdb     redis.UniversalClient
	prefix  string
	model   *plannertest.Server
	wrap    []func(*bot.Deps)
	console bot.Registration
	config  []func(*bot.Config)
}

// WithStore starts the engine on store rather than on a fresh database.
func WithStore(store *store.Store) Option { return func(s *setup) { s.store = store } }

// WithRedis starts the engine on rdb under prefix rather than on REDIS_URL
// under a fresh prefix.
func WithRedis(rdb redis.UniversalClient, prefix string) Option {
	return func(s *setup) { s.rdb, s.prefix = rdb, prefix }
}

// WithModel has the engine ask model rather than a fresh scripted server.
func WithModel(model *plannertest.Server) Option { return func(s *setup) { s.model = model } }

// ReplicaOf starts the engine on e's store, Redis, prefix and model: a
// second replica beside e, or e restarted.
func ReplicaOf(e *Env) Option {
	return func(s *setup) { s.store, s.rdb, s.prefix, s.model = e.Store, e.Redis, e.Prefix, e.Model }
}

// WithDeps passes the engine's dependencies through wrap before it is
// built, to put a failing or slow part in front of a real one. Several
// apply in order.
func WithDeps(wrap func(*bot.Deps)) Option { return func(s *setup) { s.wrap = append(s.wrap, wrap) } }

// WithConsole registers reg for the console surface before the engine
// runs (a nil Poster keeps the recording Poster), so a replica started to
// take over a request cannot post with another poster first.
func WithConsole(reg bot.Registration) Option { return func(s *setup) { s.console = reg } }

// WithConfig changes the engine's config before it starts. Several apply
// in order.
func WithConfig(f func(*bot.Config)) Option { return func(s *setup) { s.config = append(s.config, f) } }

// New starts an engine, by default on a fresh database, REDIS_URL under a
// fresh prefix and a fresh scripted model, with a recording Poster for
// the console surface, and stops it when the test ends. opts change any
// of these; New(t, ReplicaOf(e)) is a second replica beside e.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	var o setup
	for _, opt := range opts {
		opt(&o)
	}
	if o.store == nil {
		o.store = storetest.NewStore(t)
	}
	if o.rdb == nil {
		o.rdb, o.prefix = Redis(t), Prefix()
	}
	if o.model == nil {
		o.model = plannertest.NewServer(t)
	}
	store, rdb, prefix, model := o.store, o.rdb, o.prefix, o.model
	cfg := bot.Config{
		ProposalTTL:   time.Hour,
		PublicURL:     "http://bobnet.test",
		Workers:       2,
		Profiles:      planner.DefaultProfiles(),
		ReclaimIdle:   time.Second,
		SweepInterval: 50 * time.Millisecond,
		ConsumerName:  "test-" + Prefix(),
	}
	for _, f := range o.config {
		f(&cfg)
	}
	// The model is asked as serve asks it by default: streamed where it
	// streams.
	client := planner.NewClient(planner.ClientConfig{BaseURL: model.URL(), Model: "test-model", Backoff: time.Millisecond, Timeout: 20 * time.Second,
		Stream: planner.StreamAuto}, storetest.Logger(t))
	queue := redisstore.NewQueueIn(rdb, Layout(t, prefix))
	deps := Deps(client, store, redisstore.NewInFlightIn(rdb, Layout(t, prefix)), queue)
	for _, wrap := range o.wrap {
		wrap(&deps)
	}
	eng, err := bot.New(cfg, deps, storetest.Logger(t))
	if err != nil {
		t.Fatal(err)
	}
	poster := &Poster{}
	eng.Register(board.SourceConsole, bot.Registration{Poster: poster})
	if o.console.Poster != nil {
		eng.Register(board.SourceConsole, o.console)
	}
	ctx, cancel := context.WithCancel(context.Background())
	env := &Env{Engine: eng, Store: store, Redis: rdb, Queue: queue, Prefix: prefix, Model: model, Poster: poster, Cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(env.done)
		_ = eng.Run(ctx)
	}()
	t.Cleanup(env.Stop)
	return env
}

// Deps are an engine's dependencies as production builds them: every
// board capability from store, every proposal one from ps.
func Deps(pl bot.Planner, store *store.Store, ps *redisstore.InFlight, q bot.Queue) bot.Deps {
	return bot.Deps{
		Planner: pl,
		Boards:  store, History: store, Decisions: store, Audit: store, Deliveries: store,
		Cards: store, Assigned: store, Policies: store, Usage: store, Runs: store,
		Proposals: ps, Requests: ps, Queue: q, Pending: ps, Reminders: ps,
	}
}

// WorkForReview works the next model card of a running run as
// run.Worker does, writing output as the Planner, and hands it to review,
// so the run's threads are told it is ready. It returns the card's job.
func (e *Env) WorkForReview(t testing.TB, output string) board.RunJob {
	t.Helper()
	ctx := context.Background()
	job, ok, err := e.Store.ClaimRunCard(ctx, "model", time.Minute)
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	up, err := e.Store.CompleteRunCard(ctx, job, "Planner", output)
	if err != nil {
		t.Fatal(err)
	}
	e.Engine.Reviewing(ctx, job, up)
	return job
}

// NewspaperBoard writes the newspaper plan as a board made in channel
// (its thread T1), approved by alice, as an approval would.
func (e *Env) NewspaperBoard(t testing.TB, proposal board.ProposalID, channel string) board.ID {
	t.Helper()
	res := planner.Check([]byte(plannertest.NewspaperPlan(t)), plan.Options{Profiles: planner.ProfileNames(planner.DefaultProfiles())})
	ex, err := e.Store.Execute(context.Background(), board.Execution{ProposalID: proposal, Channel: channel, Thread: "T1", ApprovedBy: "alice", Plan: *res.Plan})
	if err != nil {
		t.Fatal(err)
	}
	return ex.BoardID
}

// RunningNewspaper is NewspaperBoard with a run of it started by alice,
// its cards worked by the default profiles' runners.
func (e *Env) RunningNewspaper(t testing.TB, proposal board.ProposalID, channel string) board.ID {
	t.Helper()
	id := e.NewspaperBoard(t, proposal, channel)
	if _, err := e.Store.StartRun(context.Background(), board.RunStart{Board: id, User: "alice", Trigger: "manual",
		Runners: planner.RunnersOf(planner.DefaultProfiles()), Deadline: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return id
}

// Stop stops the engine's workers and waits for them.
func (e *Env) Stop() {
	e.Cancel()
	<-e.done
}

// WaitRequest polls a request until it is done or failed.
func (e *Env) WaitRequest(t testing.TB, id board.RequestID) board.RequestStatus {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		st, err := e.Engine.Request(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if st.State == board.RequestDone || st.State == board.RequestFailed {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("request %s not answered in time", id)
	return board.RequestStatus{}
}

// WaitIdle waits until the request stream has nothing undelivered and
// nothing unacknowledged: every request was answered, so nothing more will
// be posted. Tests wait on it instead of sleeping to prove that nothing
// else happens.
func (e *Env) WaitIdle(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		waiting, inFlight, err := e.Queue.Depth(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if waiting == 0 && inFlight == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("the request stream never went idle")
}

// Poster records what the engine posts.
type Poster struct {
	mu       sync.Mutex
	Replies  []PostedReply
	Previews []board.Proposal
	Updates  []board.Proposal
	// changed is closed (and replaced) whenever something is posted, so
	// WaitFor wakes on events rather than polling.
	changed chan struct{}
}

// posted wakes every WaitFor; p.mu is held.
func (p *Poster) posted() {
	if p.changed != nil {
		close(p.changed)
	}
	p.changed = make(chan struct{})
}

// WaitFor waits until cond holds for what was posted, failing the test
// after 20 s. The engine posts off the caller's path, so a test waits for
// a message rather than expecting it when a call returns.
func (p *Poster) WaitFor(t testing.TB, what string, cond func(replies []PostedReply, previews, updates []board.Proposal) bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		p.mu.Lock()
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		ok := cond(append([]PostedReply(nil), p.Replies...), append([]board.Proposal(nil), p.Previews...), append([]board.Proposal(nil), p.Updates...))
		p.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			r, pv, u := p.Snapshot()
			t.Fatalf("waited 20s for %s; replies %+v, previews %d, updates %+v", what, r, len(pv), u)
		}
	}
}

// PostedReply is one reply with its thread.
type PostedReply struct {
	Thread board.Thread
	Reply  board.Reply
}

// Reply records a reply.
func (p *Poster) Reply(_ context.Context, t board.Thread, r board.Reply) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Replies = append(p.Replies, PostedReply{t, r})
	p.posted()
	return nil
}

// PostPreview records a preview and returns a message ref.
func (p *Poster) PostPreview(_ context.Context, pr board.Proposal) (board.MessageRef, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Previews = append(p.Previews, pr)
	p.posted()
	return board.MessageRef("msg-" + string(pr.ID)), nil
}

// UpdatePreview records an update.
func (p *Poster) UpdatePreview(_ context.Context, pr board.Proposal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Updates = append(p.Updates, pr)
	p.posted()
	return nil
}

// Snapshot returns copies of what was posted so far.
func (p *Poster) Snapshot() (replies []PostedReply, previews, updates []board.Proposal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]PostedReply(nil), p.Replies...), append([]board.Proposal(nil), p.Previews...), append([]board.Proposal(nil), p.Updates...)
}
