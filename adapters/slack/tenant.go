package slack

import (
	slackapi "github.com/slack-go/slack"

	"github.com/bobnet/bobnet/board"
)

// slackTenant is the tenant of a Slack channel as BobNet names it
// ("T123/C456" in multi-workspace mode, "C456" in a single workspace).
func slackTenant(channel string) board.Tenant {
	return board.TenantOf("slack:" + channel)
}

// clickTenant is the tenant a click or a modal's submission comes from:
// the installation of its team (its org when installed org-wide). What it
// acts on must be of this tenant, whatever ids its payload carries.
func (a *Adapter) clickTenant(cb slackapi.InteractionCallback) board.Tenant {
	return slackTenant(a.scopedID(installationOf(cb.Team.ID, cb.Enterprise.ID, cb.IsEnterpriseInstall), ""))
}
