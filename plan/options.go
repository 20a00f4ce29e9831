package plan

// Options tell the validator what it is checking against.
type Options struct {
	// Profiles are the assignee names known to this deployment; an assignee
	// outside them is a warning (matched case-insensitively).
	Profiles []string
	// HasTargetBoard says the channel has a current board, so create_card and
	// create_card_batch actions have somewhere to land. Without one they are
	// errors.
	HasTargetBoard bool
	// Board is the channel's current board, every card with its handle,
	// status and dependencies, so update_card and add_links can be checked
	// against it (unknown cards, cycles with existing links). Nil means
	// those actions cannot be checked and are refused.
	Board *BoardState
}

// BoardState is a board as V2 actions are validated against it.
type BoardState struct {
	// Name and Key name the board in warnings, such as a plan that would
	// make the channel a second board.
	Name, Key string
	Cards     []CardSummary
}

// Result is the outcome of parsing and validating one raw model output.
// Plan is the normalized envelope; it is set whenever the output parsed into
// an object of the right shape, even when Valid is false, so a person can see
// what the model meant.
type Result struct {
	Valid    bool      `json:"valid"`
	Kind     Kind      `json:"kind"`
	Errors   []Issue   `json:"errors"`
	Warnings []Issue   `json:"warnings"`
	Plan     *Envelope `json:"plan"`
	Stats    Stats     `json:"stats"`
}

// BoardSummary describes the channel's current board to the model.
type BoardSummary struct {
	ID     string
	Name   string
	Goal   string
	Counts map[string]int // cards by status
	Cards  []CardSummary  // may be trimmed to the most relevant
	// State is every card of the board, for validating changes to it.
	State *BoardState
}

// CardSummary describes one existing card to the model.
type CardSummary struct {
	ID       string
	Handle   string // NEWS-3; what people and plans call the card
	Title    string
	Status   string
	Assignee string
	// DependsOn holds the ids of the cards it depends on.
	DependsOn []string
}
