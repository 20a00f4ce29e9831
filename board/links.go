package board

import "strings"

// BoardURL is the link to a board's page that chat messages carry.
func BoardURL(publicURL string, id ID) string {
	return strings.TrimRight(publicURL, "/") + "/boards/" + string(id)
}
