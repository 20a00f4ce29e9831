package bot

import "github.com/bobnet/bobnet/board"

// The engine's records are package board's, named here too so the
// engine and its surfaces read as one vocabulary (bot.Proposal); a store
// imports board alone.
type (
	Admission     = board.Admission
	AdmitOutcome  = board.AdmitOutcome
	AdmitResult   = board.AdmitResult
	QueuedRequest = board.QueuedRequest
	RateLimit     = board.RateLimit
	Quorum        = board.Quorum
	BoardChange   = board.BoardChange
	ReviewRef     = board.ReviewRef
	RequestID     = board.RequestID
	ProposalID    = board.ProposalID
	Source        = board.Source
	Channel       = board.Channel
	Thread        = board.Thread
	MessageRef    = board.MessageRef
	Request       = board.Request
	HookOrigin    = board.HookOrigin
	RequestState  = board.RequestState
	ReplyKind     = board.ReplyKind
	Reply         = board.Reply
	RequestStatus = board.RequestStatus
	ProposalState = board.ProposalState
	Proposal      = board.Proposal
	Changes       = board.Changes
	Change        = board.Change
	Approval      = board.Approval
	RequestRecord = board.RequestRecord
	Answer        = board.Answer
)

// ValidConsoleName reports whether name can name a console channel (see
// board.ValidConsoleName).
func ValidConsoleName(name string) bool { return board.ValidConsoleName(name) }

// The records' constants.
const (
	AdmitNew           = board.AdmitNew
	AdmitDuplicate     = board.AdmitDuplicate
	AdmitThrottled     = board.AdmitThrottled
	SourceSlack        = board.SourceSlack
	SourceMatrix       = board.SourceMatrix
	SourceConsole      = board.SourceConsole
	RequestQueued      = board.RequestQueued
	RequestPlanning    = board.RequestPlanning
	RequestDone        = board.RequestDone
	RequestFailed      = board.RequestFailed
	ReplyAnswer        = board.ReplyAnswer
	ReplyClarify       = board.ReplyClarify
	ReplyRefuse        = board.ReplyRefuse
	ReplyError         = board.ReplyError
	ReplySlowDown      = board.ReplySlowDown
	ReplyProposal      = board.ReplyProposal
	ReplyInfo          = board.ReplyInfo
	ProposalPending    = board.ProposalPending
	ProposalApproved   = board.ProposalApproved
	ProposalCancelled  = board.ProposalCancelled
	ProposalExpired    = board.ProposalExpired
	ProposalSuperseded = board.ProposalSuperseded
)
