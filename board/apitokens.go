package board

import "time"

// APIToken is an API token's row: its scopes by name and, never the
// secret, only when it was made and revoked (zero while live). Package
// apitoken makes its Token of it; the row lives here because the store
// may not import apitoken, which serves HTTP.
type APIToken struct {
	Name   string
	Scopes []string
	User   string // bound user; empty means any
	// Channels are the patterns of the channels the token reaches: exact
	// channel keys, or prefixes ending in *. None means every channel.
	Channels  []string
	CreatedAt time.Time
	RevokedAt time.Time
}
