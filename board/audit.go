package board

// AuditFilter selects audit events; empty fields match everything.
type AuditFilter struct {
	Channel    string
	ProposalID ProposalID
	BoardID    ID
	Limit      int // default 1000
}
