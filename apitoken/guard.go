package apitoken

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
)

// Lookuper finds a token by its secret; *Tokens is one.
type Lookuper interface {
	Lookup(ctx context.Context, secret string) (Token, error)
}

// Guard is the API's authentication and authorization middleware.
type Guard struct {
	tokens    Lookuper
	bootstrap string
	logger    *slog.Logger
}

// NewGuard returns a guard checking tokens against store, with bootstrap
// (BOBNET_API_TOKEN) as an admin token. With no bootstrap token, requests
// without a token pass as admin: such a server listens on loopback only.
func NewGuard(tokens Lookuper, bootstrap string, logger *slog.Logger) *Guard {
	return &Guard{tokens: tokens, bootstrap: bootstrap, logger: logger}
}

type tokenKey struct{}

// FromContext returns the token a request was authorized with.
func FromContext(ctx context.Context) (Token, bool) {
	t, ok := ctx.Value(tokenKey{}).(Token)
	return t, ok
}

// RequiredScope is the scope a request needs: reads need read (those of
// adminReads, and listing tokens, admin), chat needs propose, decisions
// need approve, card changes need write, and anything else (policies,
// tokens) admin. The guard passes the pattern of the route
// the request was matched to (/api/v1/proposals/{id}/approve), so an
// encoded slash in an id cannot change the last segment it reads.
func RequiredScope(method, path string) Scope {
	if adminReads[path] || strings.HasPrefix(path, "/api/v1/tokens") {
		return ScopeAdmin
	}
	if method == http.MethodGet || method == http.MethodHead {
		return ScopeRead
	}
	switch {
	case method == http.MethodPost && strings.HasPrefix(path, "/api/v1/channels/") && strings.HasSuffix(path, "/messages"):
		return ScopePropose
	case method == http.MethodPost && strings.HasPrefix(path, "/api/v1/proposals/"):
		switch path[strings.LastIndex(path, "/")+1:] {
		case "approve", "cancel", "withdraw":
			return ScopeApprove
		case "revise", "propose-again":
			return ScopePropose
		}
	case method == http.MethodPatch && strings.HasPrefix(path, "/api/v1/cards/"):
		return ScopeWrite
	case method == http.MethodPost && strings.HasPrefix(path, "/api/v1/runs/") && strings.HasSuffix(path, "/review"):
		// Accepting a runner's output is a decision, like approving.
		return ScopeApprove
	case method == http.MethodPost && (strings.HasPrefix(path, "/api/v1/boards/") && strings.HasSuffix(path, "/runs") ||
		strings.HasPrefix(path, "/api/v1/runs/") && strings.HasSuffix(path, "/stop")):
		return ScopeWrite
	case (method == http.MethodPut || method == http.MethodDelete) && strings.HasPrefix(path, "/api/v1/boards/") && strings.HasSuffix(path, "/schedule"):
		return ScopeWrite
	}
	return ScopeAdmin
}

// adminReads are the routes that need admin even to read: what they show
// is about every channel (one channel's model use, any channel's; the
// metrics of the whole server).
var adminReads = map[string]bool{"/api/v1/usage": true, "/metrics": true}

// Middleware authenticates the bearer token and checks its scope for the
// route. It is mounted inside the router (chi's Use on a group), so the
// route is known when it runs. The token rides along in the context: its name for the audit
// log, and its bound user for the handlers, which check the "user" they
// decoded with ActsFor.
func (g *Guard) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok && eventStream(r) {
			// EventSource cannot send headers; only event streams take
			// the token from the query.
			secret, ok = r.URL.Query().Get("access_token"), r.URL.Query().Has("access_token")
		}
		secret = strings.TrimSpace(secret)
		if !ok || secret == "" {
			if g.bootstrap == "" {
				next.ServeHTTP(w, r)
				return
			}
			g.unauthorized(w, "missing API token: send Authorization: Bearer <token> (BOBNET_API_TOKEN or one from `bobnet token create`)")
			return
		}
		t, err := g.authenticate(r.Context(), secret)
		switch {
		case errors.Is(err, ErrNotFound):
			g.unauthorized(w, "unknown API token")
			return
		case errors.Is(err, ErrRevoked):
			g.unauthorized(w, fmt.Sprintf("API token %q was revoked", t.Name))
			return
		case err != nil:
			g.logger.Warn("token lookup failed", "err", err)
			httpjson.Write(w, http.StatusServiceUnavailable, map[string]any{"error": "cannot check the API token right now; try again shortly"})
			return
		}
		route := r.URL.Path
		if p := routePattern(r); p != "" {
			route = p
		}
		need := RequiredScope(r.Method, route)
		if !t.Has(need) {
			httpjson.Write(w, http.StatusForbidden, map[string]any{
				"error": fmt.Sprintf("token %q has scopes %s; %s %s needs %q (create a token with it: bobnet token create NAME --scopes %s)", t.Name, joinScopes(t.Scopes), r.Method, r.URL.Path, need, need),
				"token": t.Name, "needs": need,
			})
			return
		}
		ctx := context.WithValue(r.Context(), tokenKey{}, t)
		next.ServeHTTP(w, r.WithContext(bot.WithVia(ctx, "token:"+t.Name)))
	})
}

// eventStreams are the routes that take a token from the query string
// (access_token), because a browser's EventSource cannot send headers.
// They are matched by the router's pattern, never by how a path ends: an
// encoded slash makes any path end in "/events"
// (/api/v1/policies/console:x%2Fevents is the policy route).
var eventStreams = map[string]bool{
	"/api/v1/channels/{channel}/events": true,
	"/api/v1/boards/{id}/events":        true,
}

// eventStream says whether r was routed to an event stream. Without a
// chi route (the guard mounted where routing has not happened yet) it is
// not one, and query tokens are refused.
func eventStream(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && eventStreams[routePattern(r)]
}

// routePattern is the pattern of the chi route r was matched to, or "".
func routePattern(r *http.Request) string {
	if rctx := chi.RouteContext(r.Context()); rctx != nil {
		return rctx.RoutePattern()
	}
	return ""
}

func (g *Guard) authenticate(ctx context.Context, secret string) (Token, error) {
	if g.bootstrap != "" && subtle.ConstantTimeCompare([]byte(secret), []byte(g.bootstrap)) == 1 {
		return Token{Name: "bootstrap", Scopes: []Scope{ScopeAdmin}}, nil
	}
	return g.tokens.Lookup(ctx, secret)
}

// ErrWrongUser means a token bound to one user was used to act as
// another.
var ErrWrongUser = errors.New("token acts for another user")

// UserError is ErrWrongUser with the token and the user it is bound to.
type UserError struct {
	Token, Bound string
}

func (e *UserError) Error() string {
	return fmt.Sprintf("token %q acts only for user %q; \"user\" must be %q", e.Token, e.Bound, e.Bound)
}

// Unwrap makes errors.Is(err, ErrWrongUser) hold.
func (e *UserError) Unwrap() error { return ErrWrongUser }

// ActsFor checks that the request's token may act as user: a token bound
// to a user acts only as that user; other tokens, and requests without a
// token (a loopback server with no BOBNET_API_TOKEN), act as anyone. The
// guard does not read bodies: a handler calls this on the "user" of the
// body it decoded, so the user checked is the user acted as, whatever a
// second parser would have made of the same bytes.
func ActsFor(ctx context.Context, user string) error {
	t, ok := FromContext(ctx)
	if !ok || t.User == "" || t.User == user {
		return nil
	}
	return &UserError{Token: t.Name, Bound: t.User}
}

func joinScopes(s []Scope) string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return strings.Join(out, ",")
}

func (g *Guard) unauthorized(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="bobnet"`)
	httpjson.Write(w, http.StatusUnauthorized, map[string]any{"error": msg})
}
