package slack

import (
	"fmt"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// What one App Home lists at most: with their headers and notes, the
// three sections stay within Slack's 100 blocks a view.
const (
	maxHomeProposals = 10
	maxHomeCards     = 15
	maxHomeRunBoards = 8
	maxHomeRuns      = 3
)

// actionHomeMove prefixes the action ids of an App Home's card moves (one
// per target status, action ids being unique within a block); the value
// is "<card id>|<status>".
const actionHomeMove = "bobnet_home_move"

// homeView renders an App Home: proposals waiting for the user's
// decision with Approve and Cancel, the cards assigned to them with
// moves, and the latest runs of the boards of their channels. Everything
// shown from plans and boards is escaped as in the channel.
func homeView(h home, publicURL string) []slackapi.Block {
	var blocks []slackapi.Block
	if h.notice != "" {
		blocks = append(blocks, slackapi.NewSectionBlock(mrkdwn(h.notice), nil, nil), slackapi.NewDividerBlock())
	}
	if len(h.failed) > 0 {
		blocks = append(blocks, contextBlock(":warning: Some of this could not be read just now ("+strings.Join(h.failed, ", ")+"); open the tab again in a minute."))
	}

	blocks = append(blocks, slackapi.NewHeaderBlock(plainText("Waiting for your decision", maxHeaderText)))
	if len(h.waiting) == 0 {
		blocks = append(blocks, contextBlock("No proposal waits for your decision."))
	}
	for i, p := range h.waiting {
		if i == maxHomeProposals {
			blocks = append(blocks, contextBlock(fmt.Sprintf("…and %d more, in their channels.", len(h.waiting)-i)))
			break
		}
		blocks = append(blocks, proposalHomeBlocks(p, publicURL)...)
	}

	blocks = append(blocks, slackapi.NewDividerBlock(), slackapi.NewHeaderBlock(plainText("Cards assigned to you", maxHeaderText)))
	if len(h.cards) == 0 {
		blocks = append(blocks, contextBlock("No unfinished card is assigned to you."))
	}
	for _, ac := range h.cards {
		blocks = append(blocks, cardHomeBlocks(ac, publicURL)...)
	}

	blocks = append(blocks, slackapi.NewDividerBlock(), slackapi.NewHeaderBlock(plainText("Recent runs in your channels", maxHeaderText)))
	if len(h.runs) == 0 {
		blocks = append(blocks, contextBlock("No board of your channels has run yet."))
	}
	for _, br := range h.runs {
		blocks = append(blocks, runsHomeBlock(br, publicURL))
	}
	return blocks
}

func proposalHomeBlocks(p board.Proposal, publicURL string) []slackapi.Block {
	st := p.Plan.Stats()
	text := fmt.Sprintf("*%s* · <#%s>\n%d cards, %d dependencies · v%d requested by <@%s>",
		escape(boardName(p)), escape(p.Thread.Channel.ID), st.Cards, st.Links, p.Version, escape(p.RequestedBy))
	if q := p.Quorum; q.Multi() {
		text += fmt.Sprintf("\n%d of %d approvals", len(q.Approvals), q.Needed)
	}
	if p.Plan.Answer != "" {
		text += "\n" + escape(clip(p.Plan.Answer, 300))
	}
	return []slackapi.Block{
		slackapi.NewSectionBlock(mrkdwn(text), nil, nil),
		slackapi.NewActionBlock("bobnet_home_decision:"+string(p.ID),
			slackapi.NewButtonBlockElement(actionApprove, string(p.ID), plainText("Approve and create", maxButtonText)).WithStyle(slackapi.StylePrimary),
			slackapi.NewButtonBlockElement(actionCancel, string(p.ID), plainText("Cancel", maxButtonText)).WithStyle(slackapi.StyleDanger),
			slackapi.NewButtonBlockElement("bobnet_home_read", "", plainText("Read the plan", maxButtonText)).WithURL(previewURL(publicURL, p.ID)),
		),
		contextBlock(fmt.Sprintf("Expires <!date^%d^{date_short_pretty} at {time}|%s>.", p.ExpiresAt.Unix(), p.ExpiresAt.UTC().Format("2006-01-02 15:04 UTC"))),
	}
}

// homeMoves are the moves an App Home offers a card in each status: the
// next steps of its work, not every status.
var homeMoves = map[string][]string{
	"Backlog":     {"In Progress"},
	"Ready":       {"In Progress"},
	"In Progress": {"Review", "Done"},
	"Review":      {"Done"},
	"Blocked":     {"In Progress"},
}

func cardHomeBlocks(ac board.AssignedCard, publicURL string) []slackapi.Block {
	c := ac.Card
	url := board.BoardURL(publicURL, ac.Board.ID) + "#" + string(c.ID)
	text := fmt.Sprintf("*<%s|%s>* %s\n%s · %s", url, escape(c.Handle), escape(c.Title), escape(c.Status), escape(ac.Board.Name))
	blocks := []slackapi.Block{slackapi.NewSectionBlock(mrkdwn(text), nil, nil)}
	var buttons []slackapi.BlockElement
	for _, to := range homeMoves[c.Status] {
		buttons = append(buttons, slackapi.NewButtonBlockElement(actionHomeMove+":"+to, string(c.ID)+"|"+to, plainText("Move to "+to, maxButtonText)))
	}
	if len(buttons) > 0 {
		blocks = append(blocks, slackapi.NewActionBlock("bobnet_home_card:"+string(c.ID), buttons...))
	}
	return blocks
}

func runsHomeBlock(br boardRuns, publicURL string) slackapi.Block {
	b := br.board
	var sb strings.Builder
	fmt.Fprintf(&sb, "*<%s|%s>* (%s)", board.BoardURL(publicURL, b.ID), escape(b.Name), escape(b.Key))
	if _, id, ok := strings.Cut(b.Channel, ":"); ok && strings.HasPrefix(b.Channel, string(board.SourceSlack)+":") {
		fmt.Fprintf(&sb, " · <#%s>", escape(id))
	}
	for i, r := range br.runs {
		if i == maxHomeRuns {
			break
		}
		fmt.Fprintf(&sb, "\n• <%s|Run %d>: %s, started <!date^%d^{date_short_pretty} at {time}|%s>", bot.RunURL(publicURL, r), r.Number, escape(strings.ReplaceAll(r.State, "_", " ")),
			r.StartedAt.Unix(), r.StartedAt.UTC().Format("2006-01-02 15:04 UTC"))
	}
	return slackapi.NewSectionBlock(mrkdwn(sb.String()), nil, nil)
}
