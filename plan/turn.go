package plan

// Turn is an earlier message in the thread. Text from the model or other
// users is quoted into the prompt as data, never as instructions.
type Turn struct {
	Role string // "user" or "assistant"
	User string
	Text string
}
