// Package plan holds what a plan is: the envelope a planning model answers
// with, its actions, cards and links, and the pure functions on them that
// the planner, the bot and storage share: validation and normalization,
// statuses, schedules, the text check and the cycle search. It does no I/O
// and imports no other package of BobNet, so storage can depend on it
// without depending on the model client.
package plan

// Kind says what the model chose to do with a request.
type Kind string

// The four kinds a model may answer with.
const (
	KindAnswer         Kind = "answer"
	KindClarify        Kind = "clarify"
	KindProposeActions Kind = "propose_actions"
	KindRefuse         Kind = "refuse"
)

// ActionType names one board mutation a plan may propose. Only the types
// below are accepted; anything else (delete, archive, run…) rejects the plan.
type ActionType string

// The V1 action types, which create boards and cards.
const (
	ActionCreateBoard          ActionType = "create_board"
	ActionCreateCard           ActionType = "create_card"
	ActionCreateCardBatch      ActionType = "create_card_batch"
	ActionCreateBoardWithCards ActionType = "create_board_with_cards"
)

// The V2 action types, which change the channel's current board: a card's
// status, assignee or text, and new dependencies. Nothing is ever deleted.
const (
	ActionUpdateCard ActionType = "update_card"
	ActionAddLinks   ActionType = "add_links"
)

// NeedsTargetBoard reports whether the action works on an existing board
// (the channel's current one) rather than creating a board of its own.
func (t ActionType) NeedsTargetBoard() bool {
	switch t {
	case ActionCreateCard, ActionCreateCardBatch, ActionUpdateCard, ActionAddLinks:
		return true
	}
	return false
}

// Card statuses a planned card may start in, in their normalized spelling.
const (
	StatusBacklog = "Backlog"
	StatusReady   = "Ready"
)

// Workspace modes, in their normalized spelling. WorkspaceDirect is the
// default when a card names none.
const (
	WorkspaceDirect   = "Direct"
	WorkspaceScratch  = "Scratch"
	WorkspaceWorktree = "Worktree"
)

// Envelope is the object a planning model must return. After validation it
// is normalized: statuses and workspace modes in canonical spelling, card
// depends_on folded into the action's links.
type Envelope struct {
	Kind                Kind     `json:"kind"`
	Answer              string   `json:"answer"`
	Confidence          float64  `json:"confidence"`
	NeedsClarification  bool     `json:"needs_clarification"`
	ClarifyingQuestions []string `json:"clarifying_questions"`
	Assumptions         []string `json:"assumptions"`
	Actions             []Action `json:"actions"`
}

// Action is one proposed board mutation.
type Action struct {
	Type  ActionType  `json:"type"`
	Board *BoardDraft `json:"board,omitempty"`
	Cards []CardDraft `json:"cards"`
	// Links are the action's dependencies. In add_links an end may also
	// name an existing card of the current board by id or handle.
	Links []Link `json:"links"`
	// Card names the existing card an update_card changes, by id or
	// handle (NEWS-3); the fields below it that are set are the changes.
	Card     string  `json:"card,omitempty"`
	Status   *string `json:"status,omitempty"`
	Assignee *string `json:"assignee,omitempty"`
	Title    *string `json:"title,omitempty"`
	Body     *string `json:"body,omitempty"`
	// Cron and Timezone are a schedule_board's schedule.
	Cron     string `json:"cron,omitempty"`
	Timezone string `json:"timezone,omitempty"`
}

// BoardDraft is a board a plan proposes to create.
type BoardDraft struct {
	Name string `json:"name"`
	Goal string `json:"goal"`
}

// CardDraft is a card before it has a real id; links refer to it by TempID.
type CardDraft struct {
	TempID             string   `json:"temp_id"`
	Title              string   `json:"title"`
	Body               string   `json:"body"`
	Assignee           string   `json:"assignee"`
	Status             string   `json:"status"`
	WorkspaceMode      string   `json:"workspace_mode"`
	AcceptanceCriteria []string `json:"acceptance_criteria"`
	SuggestedSkills    []string `json:"suggested_skills"`
	Notes              string   `json:"notes"`
	// DependsOn is accepted from the model and folded into Action.Links by
	// normalization; a normalized plan carries it empty.
	DependsOn []string `json:"depends_on,omitempty"`
}

// Link says that Card cannot start before DependsOn is done. Both are temp
// ids of cards in the same action.
type Link struct {
	Card      string `json:"card"`
	DependsOn string `json:"depends_on"`
}

// Issue is one validation finding. Path points into the model's JSON, such as
// "actions[0].cards[3].status"; the empty path means the output as a whole.
type Issue struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Stats counts what a normalized plan would create.
type Stats struct {
	Cards   int `json:"cards"`
	Links   int `json:"links"`
	Actions int `json:"actions"`
}

// Stats counts the cards, links and actions of the envelope.
func (e *Envelope) Stats() Stats {
	s := Stats{Actions: len(e.Actions)}
	for _, a := range e.Actions {
		s.Cards += len(a.Cards)
		s.Links += len(a.Links)
		for _, c := range a.Cards {
			s.Links += len(c.DependsOn)
		}
	}
	return s
}

// DependsOnTitles maps each card of the action (by temp id) to the titles
// of the cards it depends on, from its links and then the card's own
// depends_on, for previews that show dependencies by name.
func (a Action) DependsOnTitles() map[string][]string {
	titles := make(map[string]string, len(a.Cards))
	for _, c := range a.Cards {
		titles[c.TempID] = c.Title
	}
	deps := map[string][]string{}
	for _, l := range a.Links {
		deps[l.Card] = append(deps[l.Card], titles[l.DependsOn])
	}
	for _, c := range a.Cards {
		for _, d := range c.DependsOn {
			deps[c.TempID] = append(deps[c.TempID], titles[d])
		}
	}
	return deps
}

// NewBoard returns the board that becomes the channel's current one when
// the plan is approved: a plan may create several, and the channel is bound
// to the last. Nil when the plan creates no board. Everything that names
// "the plan's board" (previews, diffs, approval replies) asks this.
func (e *Envelope) NewBoard() *BoardDraft {
	var b *BoardDraft
	for _, a := range e.Actions {
		if a.Board != nil && (a.Type == ActionCreateBoard || a.Type == ActionCreateBoardWithCards) {
			b = a.Board
		}
	}
	return b
}
