package slack

import (
	"fmt"
	"strconv"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
)

// A plan is drawn as Slack draws an AI app's plan: a plan block of task
// cards, each with a status (pending, in_progress, complete, error).
// Slack publishes no limits for them, so BobNet keeps to modest ones: a
// plan shows at most maxPlanTasks cards (the rest are summed up in a line
// that links the whole proposal or board), titles of maxTaskTitle
// characters and details of maxTaskDetails.
const (
	maxPlanTasks   = 30
	maxPlanTitle   = 150
	maxTaskTitle   = 150
	maxTaskDetails = 1000
	maxTaskID      = 64
)

// planTask is one card of a plan block, before it is drawn.
type planTask struct {
	ID      string
	Title   string
	Details string
	Status  bot.TaskStatus // "" draws the card without a status (greyed)
}

// planBlock draws a plan block titled title with tasks, the first
// maxPlanTasks of them; folded is how many were left out.
func planBlock(blockID, title string, tasks []planTask) (block *slackapi.PlanBlock, folded int) {
	if len(tasks) > maxPlanTasks {
		folded = len(tasks) - maxPlanTasks
		tasks = tasks[:maxPlanTasks]
	}
	cards := make([]*slackapi.TaskCardBlock, len(tasks))
	for i, t := range tasks {
		c := slackapi.NewTaskCardBlock(t.ID, clip(plain(t.Title), maxTaskTitle))
		if t.Status != "" {
			c = c.WithStatus(slackapi.TaskCardStatus(t.Status))
		}
		if t.Details != "" {
			c = c.WithDetails(richText(t.Details))
		}
		cards[i] = c
	}
	return slackapi.NewPlanBlock(clip(plain(title), maxPlanTitle), slackapi.PlanBlockOptionBlockID(blockID)).WithTasks(cards...), folded
}

// taskChunk is t as a streamed message's task_update chunk.
func taskChunk(t planTask) slackapi.TaskUpdateChunk {
	c := slackapi.NewTaskUpdateChunk(t.ID, clip(plain(t.Title), maxTaskTitle))
	c.Status = slackapi.TaskCardStatus(t.Status)
	c.Details = clip(plain(t.Details), maxTaskDetails)
	return c
}

// richText is s as a rich text block of plain text: nothing in it is
// parsed as markup, so model text cannot mention or link.
func richText(s string) *slackapi.RichTextBlock {
	s = clip(plain(s), maxTaskDetails)
	return slackapi.NewRichTextBlock("", slackapi.NewRichTextSection(slackapi.NewRichTextSectionTextElement(s, nil)))
}

// taskID is a task card's id for a plan card: made of its temp id when
// it has one (so a draft's card and the validated card are one task),
// else of its place.
func taskID(tempID string, i int) string {
	var b strings.Builder
	b.WriteString("card-")
	for _, r := range tempID {
		if r < 0x80 && (r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b.WriteRune(r)
		}
		if b.Len() >= maxTaskID {
			break
		}
	}
	if b.Len() == len("card-") {
		b.WriteString("#" + strconv.Itoa(i+1))
	}
	return b.String()
}

// planTitle is what a proposal's plan is titled: the new board's name, or
// what the plan changes.
func planTitle(p plan.Envelope) string {
	if b := p.NewBoard(); b != nil {
		return b.Name
	}
	for _, a := range p.Actions {
		if a.Type.NeedsTargetBoard() {
			return "Changes to this channel's board"
		}
	}
	return "Proposed plan"
}

// cardTasks are a plan's cards as tasks: the title with the handle a card
// of a new board will have (its board's key and its place), the assignee
// and the acceptance criteria as details. status gives each card's status;
// warned marks assignees the validation did not know.
func cardTasks(env plan.Envelope, warnings []plan.Issue, status func(plan.CardDraft) bot.TaskStatus) []planTask {
	warned := map[string]bool{}
	for _, w := range warnings {
		warned[w.Path] = true
	}
	var tasks []planTask
	for ai, a := range env.Actions {
		key := ""
		if a.Board != nil {
			key = board.BoardKey(a.Board.Name)
		}
		deps := a.DependsOnTitles()
		for ci, c := range a.Cards {
			title := c.Title
			if key != "" {
				title = fmt.Sprintf("%s-%d · %s", key, ci+1, c.Title)
			}
			assignee := c.Assignee
			switch {
			case c.Assignee == "":
				assignee = "⚠ Unassigned"
			case warned[fmt.Sprintf("actions[%d].cards[%d].assignee", ai, ci)]:
				assignee = "⚠ " + c.Assignee + " (unknown profile)"
			}
			var d strings.Builder
			d.WriteString("Assignee: " + assignee)
			if c.Status != "" {
				d.WriteString(" · " + c.Status)
			}
			if c.WorkspaceMode != "" {
				d.WriteString(" · " + c.WorkspaceMode)
			}
			for _, ac := range c.AcceptanceCriteria {
				d.WriteString("\n• " + ac)
			}
			if dd := deps[c.TempID]; len(dd) > 0 {
				d.WriteString("\nDepends on: " + strings.Join(dd, ", "))
			}
			tasks = append(tasks, planTask{ID: taskID(c.TempID, len(tasks)), Title: title, Details: d.String(), Status: status(c)})
		}
	}
	return tasks
}

// pending shows every card as pending: a plan not yet approved.
func pending(plan.CardDraft) bot.TaskStatus { return bot.TaskPending }

// proposalPlan is a proposal's plan block and the line summing up the
// cards it left out (nil when none were).
func proposalPlan(p board.Proposal, publicURL string, status func(plan.CardDraft) bot.TaskStatus) []slackapi.Block {
	block, folded := planBlock("bobnet_plan:"+string(p.ID), planTitle(p.Plan), cardTasks(p.Plan, p.Warnings, status))
	out := []slackapi.Block{block}
	if folded > 0 {
		line := fmt.Sprintf("…and %d more cards.", folded)
		if publicURL != "" {
			line += fmt.Sprintf(" <%s|Read the whole proposal>", previewURL(publicURL, p.ID))
		}
		out = append(out, slackapi.NewSectionBlock(mrkdwn(line), nil, nil))
	}
	return out
}

// previewText is a preview's plain-text fallback, for notifications and
// clients that draw no blocks.
func previewText(p board.Proposal) string {
	st := p.Plan.Stats()
	text := fmt.Sprintf("Proposed plan: %s (%d cards)", planTitle(p.Plan), st.Cards)
	if p.Plan.Answer != "" {
		text += ". " + p.Plan.Answer
	}
	return fallback(text + ". Approve, revise or cancel it in the thread.")
}
