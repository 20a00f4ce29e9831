package slack

import (
	"fmt"
	"strings"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/plan"
)

// Slack's limits on a message.
const (
	maxBlocks       = 50
	maxSectionText  = 3000
	maxHeaderText   = 150
	maxContextText  = 2000
	maxButtonText   = 75
	maxFallbackText = 3000
)

// Action ids of the preview's buttons; the value of each is the proposal id.
const (
	actionApprove      = "bobnet_approve"
	actionRevise       = "bobnet_revise"
	actionCancel       = "bobnet_cancel"
	actionProposeAgain = "bobnet_propose_again"
	reviseCallback     = "bobnet_revise_modal"
	feedbackBlock      = "feedback"
	feedbackInput      = "feedback_input"
)

// escape makes model text inert in mrkdwn: &, < and > are entities (so
// <!channel>, <@U…> and <http…|…> are shown, not acted on), and bare
// @channel/@here/@everyone get a zero-width joiner so they do not ping.
func escape(s string) string {
	if !strings.ContainsAny(s, "&<>@") {
		return s // most text: nothing to escape, nothing copied
	}
	s = strings.ReplaceAll(s, "&", "&amp;")
	s = strings.ReplaceAll(s, "<", "&lt;")
	s = strings.ReplaceAll(s, ">", "&gt;")
	for _, word := range []string{"@channel", "@here", "@everyone"} {
		s = strings.ReplaceAll(s, word, "@\u200d"+word[1:])
	}
	return s
}

// plain is model text for plain_text fields: no markup is parsed there,
// but the same words must not ping.
func plain(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	for _, word := range []string{"@channel", "@here", "@everyone"} {
		s = strings.ReplaceAll(s, word, "@\u200d"+word[1:])
	}
	return s
}

// clip cuts s to at most n runes, marking the cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func mrkdwn(s string) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.MarkdownType, clip(s, maxSectionText), false, false)
}

func plainText(s string, n int) *slackapi.TextBlockObject {
	return slackapi.NewTextBlockObject(slackapi.PlainTextType, clip(plain(s), n), false, false)
}

func contextBlock(text string) *slackapi.ContextBlock {
	return slackapi.NewContextBlock("", slackapi.NewTextBlockObject(slackapi.MarkdownType, clip(text, maxContextText), false, false))
}

// previewURL is where the whole proposal can be read when the message has
// to fold cards away.
func previewURL(publicURL string, id board.ProposalID) string {
	return strings.TrimRight(publicURL, "/") + "/proposals/" + string(id)
}

// PreviewBlocks renders a pending proposal: the goal and who asked, the
// changes, the plan as a plan block (one pending task card per card,
// titled with the handle it will have), assumptions and warnings, and
// the buttons. It stays within Slack's limits by folding cards into a
// line that links the full proposal.
func PreviewBlocks(p board.Proposal, publicURL string) []slackapi.Block {
	blocks := previewHead(p)
	blocks = append(blocks, proposalPlan(p, publicURL, pending)...)
	return append(blocks, previewTail(p)...)
}

// previewHead is a preview's blocks above its plan: the goal and who
// asked, what changed since the last version, the board's changes and
// the approvals it needs.
func previewHead(p board.Proposal) []slackapi.Block {
	intro := ""
	if b := p.Plan.NewBoard(); b != nil && b.Goal != "" {
		intro = "*Goal:* " + escape(b.Goal) + "\n"
	}
	st := p.Plan.Stats()
	intro += fmt.Sprintf("%d cards, %d dependencies · v%d requested by <@%s>", st.Cards, st.Links, p.Version, escape(p.RequestedBy))
	head := []slackapi.Block{slackapi.NewSectionBlock(mrkdwn(intro), nil, nil)}
	if p.Changes != nil {
		head = append(head, contextBlock(changesText(p)))
	}
	if len(p.BoardChanges) > 0 {
		head = append(head, slackapi.NewSectionBlock(mrkdwn(boardChangesText(p.BoardChanges)), nil, nil))
	}
	return append(head, quorumBlocks(p)...)
}

// previewTail is a preview's blocks below its plan: the schedule,
// assumptions and warnings, the buttons and the expiry.
func previewTail(p board.Proposal) []slackapi.Block {
	var tail []slackapi.Block
	if line := bot.PlannedScheduleText(p.Plan); line != "" {
		tail = append(tail, contextBlock(":alarm_clock: "+escape(line)))
	}
	if len(p.Plan.Assumptions) > 0 {
		tail = append(tail, contextBlock("*Assumptions:* "+escape(strings.Join(p.Plan.Assumptions, " · "))))
	}
	if w := warningsText(p.Warnings); w != "" {
		tail = append(tail, contextBlock(":warning: "+w))
	}
	tail = append(tail, slackapi.NewActionBlock("bobnet_decision:"+string(p.ID),
		slackapi.NewButtonBlockElement(actionApprove, string(p.ID), plainText("Approve and create", maxButtonText)).WithStyle(slackapi.StylePrimary),
		slackapi.NewButtonBlockElement(actionRevise, string(p.ID), plainText("Revise", maxButtonText)),
		slackapi.NewButtonBlockElement(actionCancel, string(p.ID), plainText("Cancel", maxButtonText)).WithStyle(slackapi.StyleDanger),
	))
	return append(tail, contextBlock(fmt.Sprintf("Nothing changes until someone approves. Expires <!date^%d^{date_short_pretty} at {time}|%s>.",
		p.ExpiresAt.Unix(), p.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"))))
}

// boardChangesText lists what a proposal would change on the current
// board, one change a line, within a section's limit.
func boardChangesText(changes []board.BoardChange) string {
	var b strings.Builder
	b.WriteString("*Changes to the board (now → after approval):*")
	for i, c := range changes {
		line := "\n• " + escape(c.String())
		if b.Len()+len(line) > maxSectionText-40 {
			fmt.Fprintf(&b, "\n…and %d more", len(changes)-i)
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

func changesText(p board.Proposal) string {
	c := p.Changes
	parts := []string{fmt.Sprintf("*Changed since v%d:* %s", p.Version-1, c.Summary())}
	add := func(label string, items []string) {
		if len(items) > 0 {
			esc := make([]string, len(items))
			for i, s := range items {
				esc[i] = escape(s)
			}
			parts = append(parts, label+" "+strings.Join(esc, ", "))
		}
	}
	add("added:", c.Added)
	add("removed:", c.Removed)
	for _, r := range c.Retitled {
		parts = append(parts, "retitled: "+escape(r.From)+" → "+escape(r.To))
	}
	for _, r := range c.Reassigned {
		parts = append(parts, "reassigned "+escape(r.Subject)+": "+escape(r.From)+" → "+escape(r.To))
	}
	add("links added:", c.LinksAdded)
	add("links removed:", c.LinksRemoved)
	add("card changes added:", c.UpdatesAdded)
	add("card changes dropped:", c.UpdatesRemoved)
	return strings.Join(parts, " · ")
}

func warningsText(ws []plan.Issue) string {
	var out []string
	for _, w := range ws {
		if strings.HasSuffix(w.Path, ".assignee") {
			continue // shown on the card itself
		}
		out = append(out, escape(w.Path+": "+w.Message))
	}
	return strings.Join(out, " · ")
}

// DecidedBlocks redraws a preview once decided: the summary stays, the
// buttons go, and a line says what happened. An approved plan shows its
// cards with the statuses they start with on the board; a closed one
// (cancelled, superseded, expired) shows them greyed, without a status.
func DecidedBlocks(p board.Proposal) []slackapi.Block {
	blocks := previewHead(p)[:1]
	var line string
	status := func(plan.CardDraft) bot.TaskStatus { return "" }
	switch p.State {
	case board.ProposalApproved:
		line = fmt.Sprintf(":white_check_mark: Approved by <@%s> — <%s|Open board>", escape(p.DecidedBy), p.BoardURL)
		status = func(c plan.CardDraft) bot.TaskStatus { return bot.TaskStatusOf(c.Status, false) }
	case board.ProposalCancelled:
		line = cancelledLine(p) // cancel.go
	case board.ProposalSuperseded:
		line = ":arrows_counterclockwise: Superseded by a revised version below"
	case board.ProposalExpired:
		line = ":hourglass: Expired — nothing was created"
	default:
		line = "State: " + string(p.State)
	}
	blocks = append(blocks, proposalPlan(p, "", status)...)
	blocks = append(blocks, slackapi.NewSectionBlock(mrkdwn(line), nil, nil))
	if p.State == board.ProposalExpired {
		blocks = append(blocks, slackapi.NewActionBlock("bobnet_expired:"+string(p.ID),
			slackapi.NewButtonBlockElement(actionProposeAgain, string(p.ID), plainText("Propose again", maxButtonText))))
	}
	return blocks
}

// StatusBlocks renders /bobnet status.
func StatusBlocks(st board.Status, boardURL string) []slackapi.Block {
	counts := []string{}
	for _, s := range board.Statuses {
		counts = append(counts, fmt.Sprintf("%s *%d*", s, st.Counts[s]))
	}
	list := func(label string, cards []board.Card) string {
		if len(cards) == 0 {
			return "*" + label + ":* none"
		}
		var b strings.Builder
		b.WriteString("*" + label + ":*")
		for i, c := range cards {
			if i == 15 {
				fmt.Fprintf(&b, "\n…and %d more", len(cards)-15)
				break
			}
			who := assigneeMention(board.TenantOf(st.Board.Channel))(c.Assignee)
			b.WriteString("\n• *" + escape(c.Handle) + "* " + escape(c.Title) + " (" + who + ", " + c.Status + ")")
		}
		return b.String()
	}
	return []slackapi.Block{
		slackapi.NewHeaderBlock(plainText(st.Board.Name, maxHeaderText)),
		slackapi.NewSectionBlock(mrkdwn(strings.Join(counts, " · ")+"\n<"+boardURL+"|Open board>"), nil, nil),
		slackapi.NewSectionBlock(mrkdwn(list("Ready to start", st.Ready)), nil, nil),
		slackapi.NewSectionBlock(mrkdwn(list("Waiting on dependencies", st.Waiting)), nil, nil),
	}
}

// helpText is what `/bobnet help` and an empty mention answer: the
// commands are the engine's table of verbs.
func helpText() string {
	return "*BobNet* turns a request into a board of cards you approve.\n" +
		"• Mention me with what you want planned, e.g. `@BobNet plan our daily research newspaper`.\n" +
		"• I reply in the thread with a preview: *Approve and create*, *Revise* or *Cancel*. Nothing changes until someone approves.\n" +
		bot.Verbs.Help(bot.SlackDialect) + "\n" +
		"• `/bobnet help` shows this."
}

// fallback is the notification text of a message with blocks. Slack
// parses it as mrkdwn too (notifications, clients that cannot draw
// blocks), so it is escaped like the blocks: no pings, no links.
func fallback(s string) string { return clip(escape(s), maxFallbackText) }
