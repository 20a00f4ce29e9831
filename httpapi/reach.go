package httpapi

import (
	"context"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/httpjson"
)

// A token may be limited to channels (apitoken.Token.Channels). Such a
// token sees and changes only what belongs to those channels: a board
// belongs to the channel it was made in, a card, run or schedule to its
// board, a proposal to its thread's channel, a request to its channel.
// Whatever else it names is answered as something that does not exist,
// by the same code and with the same body, so a limited token learns
// nothing of other channels; lists leave out what it may not see.
//
// reaches is the one check every route makes; routeReach says how each
// route finds the channel it checks, and limitRoutes refuses a limited
// token on a route that does not say.

// reaches reports whether the request's token may reach channel (a key
// such as slack:T0ONE/C0123). Requests without a token (a loopback
// server with no BOBNET_API_TOKEN), BOBNET_API_TOKEN itself and tokens
// without channel patterns reach every channel.
func reaches(r *http.Request, channel string) bool {
	t, ok := apitoken.FromContext(r.Context())
	return !ok || t.Reaches(channel)
}

// limited reports whether the request's token reaches only some
// channels. Routes that act before they read what they act on read it
// first for such a token, so that something it may not reach is answered
// as unknown before anything changes; an unlimited token takes the path
// it always took.
func limited(r *http.Request) bool {
	t, ok := apitoken.FromContext(r.Context())
	return ok && t.Limited()
}

// consoleKey is the channel key of a console channel's name.
func consoleKey(name string) string { return "console:" + name }

// boardChannel is the channel a board belongs to; board.ErrNotFound
// when there is no such board.
func boardChannel(ctx context.Context, boards BoardReader, id board.ID) (string, error) {
	b, _, err := boards.Board(ctx, id)
	return b.Channel, err
}

// reachBoardErr is nil when the request may reach board id: always for a
// token not limited to channels (without a read), else when the board
// exists and its channel is the token's; board.ErrNotFound otherwise, as
// for an unknown board, or the read's error.
func reachBoardErr(r *http.Request, boards BoardReader, id board.ID) error {
	if !limited(r) {
		return nil
	}
	channel, err := boardChannel(r.Context(), boards, id)
	if err == nil && !reaches(r, channel) {
		err = board.ErrNotFound
	}
	return err
}

// How a route finds the channel of what it serves.
type reach string

const (
	byBoard    reach = "board"    // {id} is a board: its channel
	byCard     reach = "card"     // {id} is a card id or handle: its board's channel
	byRun      reach = "run"      // {id} is a run: its board's channel
	byProposal reach = "proposal" // {id} is a proposal: its thread's channel
	byRequest  reach = "request"  // {id} is a request: its thread's channel
	byConsole  reach = "console"  // {channel} is a console channel's name: console:<name>
	byPolicy   reach = "policy"   // {channel} is a policy key: a channel, <source>:<prefix>* or default
	byList     reach = "list"     // a list, left to what the token reaches
	byTokens   reach = "tokens"   // token management: unlimited tokens only (403 otherwise)
	byQuery    reach = "query"    // ?channel= names the channel (a channel's usage)
	byNone     reach = "none"     // no API token: the OpenAPI document, a run card's output (its own token)
)

// routeReach classifies every /api/v1 route, by method and pattern. A
// route missing here is refused to every limited token (limitRoutes),
// and TestEveryRouteIsClassified fails for it.
var routeReach = map[string]reach{
	"GET /api/v1/openapi.json":                   byNone,
	"POST /api/v1/runs/{id}/cards/{card}/output": byNone,
	"GET /api/v1/boards":                         byList,
	"GET /api/v1/channels":                       byList,
	"GET /api/v1/policies":                       byList,
	"GET /api/v1/tokens":                         byTokens,
	"GET /api/v1/usage":                          byQuery,
	"POST /api/v1/tokens":                        byTokens,
	"DELETE /api/v1/tokens/{name}":               byTokens,
	"GET /api/v1/boards/{id}":                    byBoard,
	"GET /api/v1/boards/{id}/status":             byBoard,
	"GET /api/v1/boards/{id}/events":             byBoard,
	"POST /api/v1/boards/{id}/runs":              byBoard,
	"GET /api/v1/boards/{id}/runs":               byBoard,
	"GET /api/v1/boards/{id}/schedule":           byBoard,
	"PUT /api/v1/boards/{id}/schedule":           byBoard,
	"DELETE /api/v1/boards/{id}/schedule":        byBoard,
	"PATCH /api/v1/cards/{id}":                   byCard,
	"GET /api/v1/runs/{id}":                      byRun,
	"POST /api/v1/runs/{id}/cards/{card}/review": byRun,
	"POST /api/v1/runs/{id}/stop":                byRun,
	"GET /api/v1/proposals/{id}":                 byProposal,
	"POST /api/v1/proposals/{id}/approve":        byProposal,
	"POST /api/v1/proposals/{id}/cancel":         byProposal,
	"POST /api/v1/proposals/{id}/revise":         byProposal,
	"POST /api/v1/proposals/{id}/propose-again":  byProposal,
	"POST /api/v1/proposals/{id}/withdraw":       byProposal,
	"GET /api/v1/requests/{id}":                  byRequest,
	"POST /api/v1/channels/{channel}/messages":   byConsole,
	"GET /api/v1/channels/{channel}/events":      byConsole,
	"GET /api/v1/policies/{channel}":             byPolicy,
	"PUT /api/v1/policies/{channel}":             byPolicy,
}

// RouteReach is how the route method pattern finds the channel it
// checks a limited token against ("board", "card", "list", …), or ""
// when it is not classified.
func RouteReach(method, pattern string) string {
	return string(routeReach[method+" "+pattern])
}

// limitRoutes refuses a limited token on a route routeReach does not
// classify, as an unknown route is answered: a route added without its
// check is closed to limited tokens rather than open. It stands behind
// the token guard, which puts the token in the context.
func limitRoutes(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if limited(r) {
			pattern := ""
			if rc := chi.RouteContext(r.Context()); rc != nil {
				pattern = rc.RoutePattern()
			}
			if RouteReach(r.Method, pattern) == "" {
				notFoundRoute(w, r)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// notFoundRoute answers a route the API does not serve.
func notFoundRoute(w http.ResponseWriter, r *http.Request) {
	httpjson.Error(w, http.StatusNotFound, "no such route: "+r.Method+" "+r.URL.Path+" (see /api/v1/openapi.json)")
}
