package bot

import (
	"context"
	"strings"
)

// Names says what a chat verb may name that the engine looks up within
// the caller's tenant.
type Names uint8

const (
	// NamesKey: a board key (NEWS).
	NamesKey Names = 1 << iota
	// NamesHandle: a card handle (NEWS-3) or the start of a title.
	NamesHandle
	// NamesBoardID: a board id (b_…).
	NamesBoardID
	// NamesThread: the proposal of the thread the command is said in.
	NamesThread
)

// Effect is what a verb does, for a surface whose callers are allowed
// some things only (the API's token scopes).
type Effect uint8

const (
	// EffectPlan asks for a plan, or a plan again.
	EffectPlan Effect = iota
	// EffectRead reads boards, runs or policies.
	EffectRead
	// EffectChange changes cards, runs, schedules or where the bot is.
	EffectChange
	// EffectDecide decides a proposal or a card's review.
	EffectDecide
)

// Verb is one chat command: `/bobnet VERB …` in Slack and the console,
// `!bobnet VERB …` in Matrix, or, for a thread verb, `!VERB` as a reply in
// a preview's thread. The table is what every surface answers (through
// Grammar.Answer), what their help and docs/commands.md say, and what the
// tenant-isolation suites walk.
type Verb struct {
	Name string
	// Args is how its arguments are written in help, e.g. "[KEY]".
	Args string
	// Help says what it does, in one sentence without a final period.
	Help  string
	Names Names
	// Thread verbs are decisions said in a preview's thread (Matrix's
	// !approve); the others are room or slash commands.
	Thread bool
	// MatrixOnly verbs have no Slack or console form (Slack decides with
	// buttons and modals; a Slack app cannot leave a channel by itself).
	MatrixOnly bool
	Effect     Effect
	// Do answers the command (grammar.go); thread verbs have none: the
	// surface that has them decides on its thread's proposal itself.
	Do func(ctx context.Context, s Surface, c Command) CommandAnswer
}

// Grammar is a table of chat verbs: what every surface parses, answers
// and lists in its help.
type Grammar []Verb

// Verbs are the chat commands, in the order help lists them.
var Verbs = Grammar{
	{Name: "plan", Args: "<what>", Help: "plans what you say, like a mention", Do: doPlan, Effect: EffectPlan},
	{Name: "status", Args: "[board id]", Help: "shows this channel's board, or another board of this workspace or room by its id", Names: NamesBoardID, Do: doStatus, Effect: EffectRead},
	{Name: "next", Help: "lists the cards of this channel's board that are ready to start", Do: doNext, Effect: EffectRead},
	{Name: "move", Args: "<card> <status>", Help: "moves a card, named by its handle (NEWS-3) or the start of its title", Names: NamesHandle, Do: doMove, Effect: EffectChange},
	{Name: "assign", Args: "<card> <who>", Help: "assigns a card to a profile (Researcher), a person (@alice) or none", Names: NamesHandle, Do: doAssign, Effect: EffectChange},
	{Name: "run", Args: "[KEY]", Help: "starts a run of this channel's board, or of the board with that key", Names: NamesKey, Do: doRun, Effect: EffectChange},
	{Name: "runs", Args: "[KEY]", Help: "lists the latest runs", Names: NamesKey, Do: doRuns, Effect: EffectRead},
	{Name: "schedule", Args: "[KEY] daily 06:00 Europe/Berlin | cron <5 fields> <zone> | off", Help: "shows or sets when a board runs by itself", Names: NamesKey, Do: doSchedule, Effect: EffectChange},
	{Name: "accept", Args: "<card>", Help: "accepts a card waiting for review in the running run", Names: NamesHandle, Do: doReview, Effect: EffectDecide},
	{Name: "sendback", Args: "<card> <why>", Help: "sends a card under review back with a reason", Names: NamesHandle, Do: doReview, Effect: EffectDecide},
	{Name: "policy", Help: "shows who decides here and how many approvals a plan needs", Do: doPolicy, Effect: EffectRead},
	{Name: "leave", Help: "makes me leave the room", MatrixOnly: true, Do: doLeave, Effect: EffectChange},
	{Name: "approve", Help: "approves the thread's proposal", Names: NamesThread, Thread: true, MatrixOnly: true, Effect: EffectDecide},
	{Name: "revise", Args: "<what to change>", Help: "re-plans the thread's proposal with your feedback", Names: NamesThread, Thread: true, MatrixOnly: true, Effect: EffectPlan},
	{Name: "cancel", Help: "cancels the thread's proposal", Names: NamesThread, Thread: true, MatrixOnly: true, Effect: EffectDecide},
	{Name: "again", Help: "plans the thread's request again", Names: NamesThread, Thread: true, MatrixOnly: true, Effect: EffectPlan},
	{Name: "withdraw", Help: "takes your approval of the thread's proposal back", Names: NamesThread, Thread: true, MatrixOnly: true, Effect: EffectDecide},
}

// Lookup finds a verb of the table by name (any case); thread says
// whether it was said as a thread verb (!approve) or a command.
func (g Grammar) Lookup(name string, thread bool) (Verb, bool) {
	for _, v := range g {
		if strings.EqualFold(v.Name, name) && v.Thread == thread {
			return v, true
		}
	}
	return Verb{}, false
}

// Help lists the commands a surface answers, one line each, as
// "• <prefix>verb args — what it does." Thread verbs are written "!verb";
// a surface without the Matrix verbs leaves them and the thread verbs
// out; commands are in backticks where the dialect writes them so.
func (g Grammar) Help(d Dialect) string {
	var sb strings.Builder
	for _, v := range g {
		if v.MatrixOnly && !d.MatrixVerbs {
			continue
		}
		call := d.Prefix + v.Name
		if v.Thread {
			call = "!" + v.Name
		}
		if v.Args != "" {
			call += " " + v.Args
		}
		sb.WriteString("• " + d.code(call) + " — " + v.Help)
		if v.Thread {
			sb.WriteString(" (a reply in the preview's thread)")
		}
		sb.WriteString(".\n")
	}
	return strings.TrimSuffix(sb.String(), "\n")
}

// Markdown is the table of the commands for docs/commands.md: each verb
// as Slack and the console write it, as Matrix does, and what it does.
func (g Grammar) Markdown() string {
	cell := func(d Dialect, v Verb) string {
		if v.MatrixOnly && !d.MatrixVerbs {
			return "—"
		}
		call := d.Prefix + v.Name
		if v.Thread {
			call = "!" + v.Name
		}
		if v.Args != "" {
			call += " " + v.Args
		}
		return "`" + strings.ReplaceAll(call, "|", `\|`) + "`"
	}
	var sb strings.Builder
	sb.WriteString("| Slack and the console | Matrix | What it does |\n| --- | --- | --- |\n")
	for _, v := range g {
		help := v.Help
		if v.Thread {
			help += " (a reply in the preview's thread)"
		}
		sb.WriteString("| " + cell(SlackDialect, v) + " | " + cell(MatrixDialect, v) + " | " + help + " |\n")
	}
	return sb.String()
}
