package slack

import (
	"context"
	"fmt"
	"slices"
	"strings"

	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// PolicyText describes a policy in Slack mrkdwn.
func PolicyText(in board.PolicyInForce) string {
	p := in.Policy
	var b strings.Builder
	fmt.Fprintf(&b, "*Approval policy* (%s)\n", escape(bot.PolicyName(in.Key)))
	fmt.Fprintf(&b, "• Who decides: %s\n", decidersText(p.Deciders))
	fmt.Fprintf(&b, "• Approvals needed: %d", max(p.Approvals, 1))
	if ac := p.AboveCards; ac != nil {
		fmt.Fprintf(&b, "; %d for a plan of more than %d cards", ac.Approvals, ac.Cards)
	}
	b.WriteString("\n")
	if p.SelfApproval {
		b.WriteString("• The requester's own approval counts.\n")
	} else {
		b.WriteString("• The requester's own approval does not count.\n")
	}
	if bu := p.Budget; bu != nil && bu.TokensPerDay > 0 {
		fmt.Fprintf(&b, "• Model budget: %d tokens a day (UTC).", bu.TokensPerDay)
	} else {
		b.WriteString("• Model budget: none.")
	}
	return b.String()
}

// decidersText renders deciders with Slack user ids as mentions.
func decidersText(deciders []string) string {
	return bot.DecidersText(deciders, func(d string) string {
		switch {
		case strings.HasPrefix(d, board.DeciderSlackGroup):
			return "<!subteam^" + escape(strings.TrimPrefix(d, board.DeciderSlackGroup)) + ">"
		case strings.Contains(d, ":"):
			return escape(d)
		}
		return "<@" + escape(d) + ">"
	})
}

// quorumBlocks is the preview's line about approvals: "1 of 2 approvals:
// @alice" and the policy it was proposed under. None for a proposal that
// needs one approval under the built-in rule.
func quorumBlocks(p board.Proposal) []slackapi.Block {
	q := p.Quorum
	if q == nil || (q.Key == bot.BuiltinPolicyKey && q.Needed <= 1) {
		return nil
	}
	var parts []string
	if q.Needed > 1 {
		s := fmt.Sprintf("*%d of %d approvals*", len(q.Approvals), q.Needed)
		if len(q.Approvals) > 0 {
			s += ": " + decidersText(q.Approvals)
		}
		parts = append(parts, s)
	}
	parts = append(parts, "decided under "+escape(bot.PolicyName(q.Key))+" by "+decidersText(q.Policy.Deciders))
	if !q.Policy.SelfApproval {
		parts = append(parts, "the requester's own approval does not count")
	}
	blocks := []slackapi.Block{contextBlock(strings.Join(parts, " · "))}
	if q.Needed > 1 && len(q.Approvals) > 0 && p.State == board.ProposalPending {
		blocks = append(blocks, slackapi.NewActionBlock("bobnet_quorum:"+string(p.ID),
			slackapi.NewButtonBlockElement(actionWithdraw, string(p.ID), plainText("Withdraw my approval", maxButtonText))))
	}
	return blocks
}

// actionWithdraw is the button that takes back one's approval before the
// quorum is reached.
const actionWithdraw = "bobnet_withdraw"

// withdraw takes back user's approval and tells them privately; the
// engine redraws the preview.
func (a *Adapter) withdraw(ctx context.Context, id board.ProposalID, user, channel, thread string) error {
	p, err := a.eng.Withdraw(ctx, id, user)
	if err != nil {
		return err
	}
	a.ephemeral(ctx, channel, thread, user, fmt.Sprintf("Your approval is withdrawn: %d of %d approvals now.", len(p.Quorum.Approvals), p.Quorum.Needed))
	return nil
}

// approvalText tells an approver what their click did when more
// approvals are needed.
func approvalText(a board.Approval) string {
	return fmt.Sprintf("Your approval is recorded: %d of %d approvals. The board is created when the last one arrives.", len(a.Approvals), a.Needed)
}

// updatedBlocks redraws a preview: a proposal still pending (an approval
// was recorded or withdrawn) keeps its buttons and shows the count; a
// decided one loses them.
func updatedBlocks(p board.Proposal, publicURL string) []slackapi.Block {
	if p.State == board.ProposalPending {
		return PreviewBlocks(p, publicURL)
	}
	return DecidedBlocks(p)
}

// InGroup reports whether user is in the Slack user group, for
// "slack_group:S…" deciders (usergroups.users.list; the app needs the
// usergroups:read scope). In multi-workspace mode the group is read with
// the token of the channel's installation ("T123/C0123"): a group id
// names a group of the workspace the decision is made in.
func (a *Adapter) InGroup(ctx context.Context, channel, group, user string) (bool, error) {
	api := a.api
	if a.teams != nil {
		installation, _, ok := strings.Cut(channel, "/")
		if !ok {
			return false, fmt.Errorf("%w: %s", errNoWorkspace, channel)
		}
		c, err := a.teams.client(ctx, installation)
		if err != nil {
			return false, fmt.Errorf("members of user group %s: %w", group, err)
		}
		api = c
	}
	members, err := api.GetUserGroupMembersContext(ctx, group)
	if err != nil {
		return false, fmt.Errorf("members of user group %s: %w", group, err)
	}
	return slices.Contains(members, user), nil
}
