package metrics

import (
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/plan"
)

// A label value is one of a few words known here, never anything a
// workspace, room, channel or user names: /metrics is scraped by whoever
// runs the monitoring, a series per tenant would grow without end and tell
// them who uses BobNet. A value outside its set is counted as other, so a
// caller passing something new cannot add series (nor leak what it
// passed). Per-channel use is the API's (GET /api/v1/usage).
const other = "other"

// labelSet is the values one label may take.
type labelSet map[string]bool

func setOf(values ...string) labelSet {
	s := labelSet{}
	for _, v := range values {
		s[v] = true
	}
	return s
}

// value is v when the set has it, else other.
func (s labelSet) value(v string) string {
	if s[v] {
		return v
	}
	return other
}

var (
	// sources are the surfaces a request, or a channel spending model
	// tokens, belongs to.
	sources = setOf(string(board.SourceSlack), string(board.SourceMatrix), string(board.SourceConsole))
	// requestOutcomes are a request's answer kinds and the reasons one
	// was never queued.
	requestOutcomes = setOf(
		string(board.ReplyAnswer), string(board.ReplyClarify), string(board.ReplyRefuse), string(board.ReplyError),
		string(board.ReplySlowDown), string(board.ReplyProposal), string(board.ReplyInfo),
		"duplicate", "rate_limited", "invalid", "unavailable")
	// proposalOutcomes are how a proposal is created and leaves pending.
	proposalOutcomes = setOf("created",
		string(board.ProposalApproved), string(board.ProposalCancelled), string(board.ProposalExpired), string(board.ProposalSuperseded))
	// planningOutcomes are a plan's kinds and why a planning call failed.
	planningOutcomes = setOf(
		string(plan.KindAnswer), string(plan.KindClarify), string(plan.KindProposeActions), string(plan.KindRefuse),
		"invalid", "timeout", "unreachable")
	// runStates are how a run ends.
	runStates = setOf(board.RunDone, board.RunStopped, board.RunTimedOut)
)
