package board

import "strings"

// Tenant names who may reach a board: a Slack installation (a workspace,
// or an Enterprise Grid org installed org-wide), one Matrix room, the web
// console, or one hook. A board belongs to the channel it was made in and
// so to that channel's tenant. Board keys are unique per tenant, and what
// a person types in chat (a key, a handle, a board id) is looked up only
// among their own tenant's boards.
type Tenant string

// TenantConsole is the web console's tenant: local and trusted, and the
// home of channels that name no other (a board made through the API
// without a channel).
const TenantConsole Tenant = "console"

// TenantOf names the tenant of a channel key:
//   - slack:T…/C… (multi-workspace): slack:T…, the installation; on an
//     org-wide Enterprise Grid install the installation is the org, E…;
//   - slack:C… (a single-workspace BobNet): slack, the one installed team;
//   - matrix:!room:server: the room itself;
//   - console:hook-NAME and webhook:NAME: hook:NAME;
//   - any other console:… and the empty channel: console;
//   - anything else: the channel itself, a tenant of its own.
//
// migrations/0019_board_tenants.sql states the same rule in SQL
// (bobnet_tenant); a test holds the two to each other.
func TenantOf(channel string) Tenant {
	src, id, _ := strings.Cut(channel, ":")
	switch {
	case channel == "":
		return TenantConsole
	case src == "slack":
		if inst, _, ok := strings.Cut(id, "/"); ok {
			return Tenant("slack:" + inst)
		}
		return "slack"
	case src == "matrix":
		return Tenant(channel)
	case src == "console" && strings.HasPrefix(id, "hook-"):
		return Tenant("hook:" + strings.TrimPrefix(id, "hook-"))
	case src == "webhook":
		return Tenant("hook:" + id)
	case src == "console":
		return TenantConsole
	}
	return Tenant(channel)
}

// Reaches reports whether a caller of tenant t may see the board: whether
// the board's channel belongs to t.
func (t Tenant) Reaches(b Board) bool { return TenantOf(b.Channel) == t }
