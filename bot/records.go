package bot

import "github.com/bobnet/bobnet/bot/record"

// The engine's records are package record's, named here too so the
// engine and its surfaces read as one vocabulary (bot.Proposal); a store
// imports record alone.
type (
	Admission     = record.Admission
	AdmitOutcome  = record.AdmitOutcome
	AdmitResult   = record.AdmitResult
	QueuedRequest = record.QueuedRequest
	RateLimit     = record.RateLimit
	Quorum        = record.Quorum
	BoardChange   = record.BoardChange
	ReviewRef     = record.ReviewRef
	RequestID     = record.RequestID
	ProposalID    = record.ProposalID
	Source        = record.Source
	Channel       = record.Channel
	Thread        = record.Thread
	MessageRef    = record.MessageRef
	Request       = record.Request
	HookOrigin    = record.HookOrigin
	RequestState  = record.RequestState
	ReplyKind     = record.ReplyKind
	Reply         = record.Reply
	RequestStatus = record.RequestStatus
	ProposalState = record.ProposalState
	Proposal      = record.Proposal
	Changes       = record.Changes
	Change        = record.Change
	Approval      = record.Approval
	RequestRecord = record.RequestRecord
	Answer        = record.Answer
)

// ValidConsoleName reports whether name can name a console channel (see
// record.ValidConsoleName).
func ValidConsoleName(name string) bool { return record.ValidConsoleName(name) }

// The records' constants.
const (
	AdmitNew           = record.AdmitNew
	AdmitDuplicate     = record.AdmitDuplicate
	AdmitThrottled     = record.AdmitThrottled
	SourceSlack        = record.SourceSlack
	SourceMatrix       = record.SourceMatrix
	SourceConsole      = record.SourceConsole
	RequestQueued      = record.RequestQueued
	RequestPlanning    = record.RequestPlanning
	RequestDone        = record.RequestDone
	RequestFailed      = record.RequestFailed
	ReplyAnswer        = record.ReplyAnswer
	ReplyClarify       = record.ReplyClarify
	ReplyRefuse        = record.ReplyRefuse
	ReplyError         = record.ReplyError
	ReplySlowDown      = record.ReplySlowDown
	ReplyProposal      = record.ReplyProposal
	ReplyInfo          = record.ReplyInfo
	ProposalPending    = record.ProposalPending
	ProposalApproved   = record.ProposalApproved
	ProposalCancelled  = record.ProposalCancelled
	ProposalExpired    = record.ProposalExpired
	ProposalSuperseded = record.ProposalSuperseded
)
