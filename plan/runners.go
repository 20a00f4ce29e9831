package plan

import "strings"

// Runner says who works a card in a run ("model", "hook:<name>", or ""
// for people) and whether its output skips Review on its way to Done.
type Runner struct {
	Name     string
	NoReview bool
}

// Runners says who works each assignee's cards in a run: by name
// (matched without regard to case or surrounding spaces), and Others for
// everyone else. The zero value has people work every card, reviewed.
type Runners struct {
	ByName map[string]Runner
	Others Runner
}

// For is the runner of assignee's cards.
func (rs Runners) For(assignee string) Runner {
	if r, ok := rs.ByName[RunnerKey(assignee)]; ok {
		return r
	}
	return rs.Others
}

// RunnerKey is how Runners names an assignee.
func RunnerKey(assignee string) string { return strings.ToLower(strings.TrimSpace(assignee)) }
