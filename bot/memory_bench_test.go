package bot_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/planner"
	"github.com/bobnet/bobnet/planner/plannertest"
	"github.com/bobnet/bobnet/store/storetest"
)

// memory implements the engine's stores in memory, so a benchmark can
// measure the engine's own work per turn apart from Redis and Postgres.
type memory struct {
	mu        sync.Mutex
	proposals map[board.ProposalID]board.Proposal
	requests  map[board.RequestID]board.RequestRecord
	queue     chan board.QueuedRequest
}

func newMemory() *memory {
	return &memory{proposals: map[board.ProposalID]board.Proposal{}, requests: map[board.RequestID]board.RequestRecord{}, queue: make(chan board.QueuedRequest, 16)}
}

func (m *memory) PutProposal(_ context.Context, p board.Proposal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.proposals[p.ID] = p
	return nil
}
func (m *memory) PutDecision(ctx context.Context, p board.Proposal) error {
	return m.PutProposal(ctx, p)
}
func (m *memory) SetPreviewMessage(_ context.Context, id board.ProposalID, ref board.MessageRef, _ time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.proposals[id]
	p.Message = ref
	m.proposals[id] = p
	return false, nil
}
func (m *memory) PreviewMessage(_ context.Context, id board.ProposalID, _ time.Time) (board.MessageRef, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.proposals[id].Message, nil
}
func (m *memory) Proposal(_ context.Context, id board.ProposalID) (board.Proposal, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.proposals[id]
	if !ok {
		return p, bot.ErrNotFound
	}
	return p, nil
}
func (m *memory) Claim(context.Context, board.ProposalID, string, time.Duration) (bool, error) {
	return true, nil
}
func (m *memory) ClaimProposal(ctx context.Context, id board.ProposalID, _ string, _ time.Duration) (board.Proposal, bool, error) {
	p, err := m.Proposal(ctx, id)
	return p, err == nil, err
}
func (m *memory) Release(context.Context, board.ProposalID, string) error { return nil }
func (m *memory) RenewClaim(context.Context, board.ProposalID, string, time.Duration) error {
	return nil
}
func (m *memory) DueExpiries(context.Context, time.Time, int) ([]board.ProposalID, error) {
	return nil, nil
}
func (m *memory) RemoveExpiry(context.Context, board.ProposalID) error { return nil }
func (m *memory) Ping(context.Context) error                           { return nil }
func (m *memory) PutRequest(_ context.Context, r board.RequestRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests[r.Request.ID] = r
	return nil
}
func (m *memory) Request(_ context.Context, id board.RequestID) (board.RequestRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[id], nil
}
func (m *memory) Admit(_ context.Context, a board.Admission) (board.AdmitResult, error) {
	m.mu.Lock()
	m.requests[a.Record.Request.ID] = a.Record
	m.mu.Unlock()
	m.queue <- board.QueuedRequest{MessageID: string(a.Record.Request.ID), RequestID: a.Record.Request.ID}
	return board.AdmitResult{Outcome: board.AdmitNew, RequestID: a.Record.Request.ID}, nil
}
func (m *memory) Allow(context.Context, string, board.RateLimit) (bool, error) { return true, nil }
func (m *memory) AppendTurn(context.Context, string, plan.Turn) error          { return nil }
func (m *memory) Turns(context.Context, string) ([]plan.Turn, error)           { return nil, nil }
func (m *memory) Init(context.Context) error                                   { return nil }
func (m *memory) Renew(context.Context, string, []string) error                { return nil }
func (m *memory) Ack(context.Context, string) error                            { return nil }
func (m *memory) Reclaim(context.Context, string, time.Duration) ([]board.QueuedRequest, error) {
	return nil, nil
}
func (m *memory) Read(ctx context.Context, _ string, block time.Duration) ([]board.QueuedRequest, error) {
	select {
	case d := <-m.queue:
		return []board.QueuedRequest{d}, nil
	case <-time.After(block):
		return nil, nil
	case <-ctx.Done():
		return nil, nil
	}
}

// memoryBoards is the board store's part the engine uses, in memory.
type memoryBoards struct{}

func (memoryBoards) Execute(context.Context, board.Execution) (board.ExecResult, error) {
	return board.ExecResult{}, nil
}
func (memoryBoards) ChannelBoard(context.Context, string) (board.Board, error) {
	return board.Board{}, board.ErrNotFound
}
func (memoryBoards) BoardSummary(context.Context, board.ID) (plan.BoardSummary, error) {
	return plan.BoardSummary{}, board.ErrNotFound
}
func (memoryBoards) Status(context.Context, board.ID) (board.Status, error) {
	return board.Status{}, board.ErrNotFound
}
func (memoryBoards) RecordAudit(context.Context, board.AuditEvent) error      { return nil }
func (memoryBoards) SaveProposal(context.Context, board.ProposalRecord) error { return nil }
func (memoryBoards) RecordDelivery(_ context.Context, d board.Delivery) (board.DeliveryResult, error) {
	return board.DeliveryResult{RequestID: d.RequestID, IsNew: true, Own: true}, nil
}
func (memoryBoards) SetProposalState(context.Context, board.ProposalRecord, string, string) error {
	return nil
}
func (memoryBoards) Proposal(context.Context, board.ProposalID) (board.ProposalRecord, error) {
	return board.ProposalRecord{}, board.ErrNotFound
}

// BenchmarkEngineTurnOwnWork is EngineTurn with Redis and Postgres in
// memory: what the engine itself costs per turn (prompt input, proposal,
// JSON, bookkeeping), the figure the < 1 ms target is about.
func BenchmarkEngineTurnOwnWork(b *testing.B) {
	res := planner.Check([]byte(plannertest.NewspaperPlan(b)), plan.Options{Profiles: []string{"Coder", "Planner", "Researcher", "Reviewer"}})
	mem := newMemory()
	eng, err := bot.New(bot.Config{Workers: 1, Profiles: planner.DefaultProfiles(), ReclaimIdle: time.Hour, SweepInterval: time.Hour},
		bot.Deps{Planner: stubPlanner{planner.Outcome{Result: res}}, Boards: memoryBoards{}, History: memoryBoards{}, Decisions: memoryBoards{},
			Audit: memoryBoards{}, Deliveries: memoryBoards{}, Proposals: mem, Requests: mem, Queue: mem},
		storetest.Logger(b))
	if err != nil {
		b.Fatal(err)
	}
	measureTurns(b, eng)
}
