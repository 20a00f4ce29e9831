package bot

import (
	"context"

	"github.com/bobnet/bobnet/board"
)

// Surface is what a chat surface (Slack, Matrix) asks of the engine:
// requests, the decisions people make on previews and on run cards
// waiting for review, and the board, card, run, policy and budget commands
// they type. *Engine is one. Each adapter
// declares its own Engine as Surface plus whatever only it calls, so the
// surfaces share one list instead of keeping copies that drift apart.
type Surface interface {
	Submit(ctx context.Context, r board.Request) (board.RequestID, error)
	Authorize(ctx context.Context, id board.ProposalID, user string) (board.Proposal, error)
	Approve(ctx context.Context, id board.ProposalID, user string) (board.Approval, error)
	CancelWithReason(ctx context.Context, id board.ProposalID, user, reason string) (board.Proposal, error)
	Withdraw(ctx context.Context, id board.ProposalID, user string) (board.Proposal, error)
	Revise(ctx context.Context, id board.ProposalID, user, feedback string) (board.RequestID, error)
	ProposeAgain(ctx context.Context, id board.ProposalID, user string) (board.RequestID, error)
	ChannelStatus(ctx context.Context, ch board.Channel) (board.Status, error)
	BoardStatusIn(ctx context.Context, ch board.Channel, id board.ID) (board.Status, error)
	MoveCard(ctx context.Context, ch board.Channel, user, ref, status string) (board.CardUpdate, error)
	AssignCard(ctx context.Context, ch board.Channel, user, ref, profile string) (board.CardUpdate, error)
	NextCards(ctx context.Context, ch board.Channel) (board.Status, error)
	StartRun(ctx context.Context, ch board.Channel, user, ref string) (board.Run, error)
	RecentRuns(ctx context.Context, ch board.Channel, ref string) (board.Board, []board.Run, error)
	ReviewByHandle(ctx context.Context, ch board.Channel, user, ref string, accept bool, reason string) (board.CardUpdate, error)
	Schedule(ctx context.Context, ch board.Channel, user string, c ScheduleCommand) (string, error)
	RunsLine(ctx context.Context, b board.Board) string
	PolicyFor(ctx context.Context, ch board.Channel) (board.PolicyInForce, error)
	BudgetStatus(ctx context.Context, ch board.Channel) (Budget, error)
	AuthorizeReview(ctx context.Context, ref board.ReviewRef, user string) (ReviewPlace, error)
	ReviewRunCard(ctx context.Context, run board.RunID, card board.CardID, round int, user string, accept bool, reason string) (board.CardUpdate, error)
}

// The engine is every surface's engine.
var _ Surface = (*Engine)(nil)
