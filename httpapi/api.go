package httpapi

import (
	"net/http"

	"github.com/bobnet/bobnet/httpjson"
	"github.com/go-chi/chi/v5"
)

// Router is a set of routes that mounts itself.
type Router interface {
	Routes(r chi.Router)
}

// API is every /api/v1 route set BobNet serves, each built by its New
// function; Routes mounts them all.
type API struct {
	// Guards stand in front of every route set but Outputs, in order:
	// Guard first (cross-site and rebinding), then the token guard.
	Guards    []func(http.Handler) http.Handler
	Chat      *Chat
	Cards     *Cards
	Policies  *Policies
	Runs      *Runs
	Schedules *Schedules
	Usage     *Usage
	// Tokens are the token management routes.
	Tokens *Tokens
	// Boards are the board JSON routes, which live beside the board page
	// for now.
	Boards Router
	// Outputs come with the card's own token, which opens that route for
	// that card and nothing else: no guard stands in front.
	Outputs *Outputs
}

// Routes mounts the API on r: the OpenAPI document (public, like the
// outputs), the guarded route sets, and JSON answers for unknown routes
// and wrong methods anywhere on r, like every other API answer. Behind
// the guards, limitRoutes closes every route routeReach does not
// classify to tokens limited to channels.
func (a API) Routes(r chi.Router) {
	r.Get("/api/v1/openapi.json", serveOpenAPI)
	a.Outputs.Routes(r)
	r.Group(func(r chi.Router) {
		for _, g := range a.Guards {
			r.Use(g)
		}
		r.Use(limitRoutes)
		for _, set := range []Router{a.Boards, a.Chat, a.Cards, a.Runs, a.Schedules, a.Policies, a.Usage, a.Tokens} {
			set.Routes(r)
		}
	})
	r.NotFound(notFoundRoute)
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		httpjson.Error(w, http.StatusMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+" (see /api/v1/openapi.json)")
	})
}
