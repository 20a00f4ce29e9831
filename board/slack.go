package board

import (
	"errors"
	"time"
)

// ErrNotInstalled means BobNet has no installation for that Slack
// workspace or organization.
var ErrNotInstalled = errors.New("slack: not installed there")

// SlackInstallation is BobNet installed in one Slack workspace, or in an
// Enterprise Grid organization as a whole, through OAuth.
type SlackInstallation struct {
	// ID is the team id, or the enterprise id of an org-wide install.
	ID                  string
	TeamID              string
	TeamName            string
	EnterpriseID        string
	IsEnterpriseInstall bool
	BotUserID           string
	AppID               string
	Scopes              string
	InstallerUserID     string
	BotToken            string
	// RefreshToken and TokenExpiresAt are set when the app rotates its
	// tokens; a zero TokenExpiresAt is a token that does not expire.
	RefreshToken   string
	TokenExpiresAt time.Time
	InstalledAt    time.Time
}
