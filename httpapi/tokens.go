package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/httpjson"
)

// TokenStore makes, lists and revokes API tokens; *apitoken.Tokens is
// one.
type TokenStore interface {
	CreateLimited(ctx context.Context, name string, scopes []apitoken.Scope, user string, channels []string) (string, error)
	List(ctx context.Context) ([]apitoken.Token, error)
	Revoke(ctx context.Context, name string) error
}

// Tokens serves /api/v1/tokens: what `bobnet token` does, over HTTP.
// Every route needs the admin scope (the token guard), and a token that
// is itself limited to channels or bound to a user may not manage
// tokens: it could make one that reaches further than itself.
type Tokens struct {
	store  TokenStore
	logger *slog.Logger
}

// NewTokens returns the token routes over store.
func NewTokens(store TokenStore, logger *slog.Logger) *Tokens {
	return &Tokens{store: store, logger: logger}
}

// Routes mounts the token routes; the caller puts the guards in front.
func (x *Tokens) Routes(r chi.Router) {
	r.Get("/api/v1/tokens", x.list)
	r.Post("/api/v1/tokens", x.create)
	r.Delete("/api/v1/tokens/{name}", x.revoke)
}

// unlimited answers 403 and reports false for a token limited to
// channels or bound to a user.
func (x *Tokens) unlimited(w http.ResponseWriter, r *http.Request) bool {
	t, ok := apitoken.FromContext(r.Context())
	if !ok || !t.Limited() && t.User == "" {
		return true
	}
	httpjson.Write(w, http.StatusForbidden, map[string]any{
		"error": fmt.Sprintf("token %q is limited to channels or bound to a user; managing tokens needs an admin token that is neither", t.Name),
		"token": t.Name,
	})
	return false
}

// tokenBody is the body of POST /api/v1/tokens.
type tokenBody struct {
	Name     string   `json:"name"`
	Scopes   []string `json:"scopes"`
	User     string   `json:"user"`
	Channels []string `json:"channels"`
}

func (x *Tokens) create(w http.ResponseWriter, r *http.Request) {
	if !x.unlimited(w, r) {
		return
	}
	var body tokenBody
	if !Decode(w, r, &body) {
		return
	}
	scopes, err := apitoken.ParseScopes(strings.Join(body.Scopes, ","))
	if err == nil && len(body.Scopes) != len(scopes) {
		err = errors.New(`"scopes" names each scope once, without commas or blanks`)
	}
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, `"scopes": `+err.Error())
		return
	}
	if body.User != "" && !ValidName(body.User) {
		httpjson.Error(w, http.StatusBadRequest, `"user" is left out for a token that acts for anyone, or is 1 to 64 letters, digits or . _ @ -`)
		return
	}
	if body.Channels != nil && len(body.Channels) == 0 {
		httpjson.Error(w, http.StatusBadRequest, `"channels" is left out for a token that reaches every channel, or holds at least one pattern`)
		return
	}
	channels, err := apitoken.CheckChannels(body.Channels)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, `"channels": `+err.Error())
		return
	}
	secret, err := x.store.CreateLimited(r.Context(), body.Name, scopes, body.User, channels)
	switch {
	case errors.Is(err, apitoken.ErrBadName), errors.Is(err, apitoken.ErrBadChannels):
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	case errors.Is(err, apitoken.ErrExists):
		httpjson.Error(w, http.StatusConflict, err.Error())
		return
	case err != nil:
		x.logger.Error("create token", "token", body.Name, "err", err)
		httpjson.Error(w, http.StatusServiceUnavailable, "the token store is unavailable; try again shortly")
		return
	}
	x.logger.Info("token created", "token", body.Name, "by", actorOf(r))
	httpjson.Write(w, http.StatusCreated, map[string]any{
		"name": body.Name, "scopes": scopes, "user": body.User, "channels": nonNil(channels), "secret": secret,
	})
}

// tokenView is a token as GET /api/v1/tokens lists it: never its secret
// or its hash, which only `bobnet token create` and POST show, once.
type tokenView struct {
	apitoken.Token
	Channels []string `json:"channels"`
}

func (x *Tokens) list(w http.ResponseWriter, r *http.Request) {
	if !x.unlimited(w, r) {
		return
	}
	all, err := x.store.List(r.Context())
	if err != nil {
		x.logger.Error("list tokens", "err", err)
		httpjson.Error(w, http.StatusServiceUnavailable, "the token store is unavailable; try again shortly")
		return
	}
	out := make([]tokenView, len(all))
	for i, t := range all {
		out[i] = tokenView{Token: t, Channels: nonNil(t.Channels)}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"tokens": out})
}

func (x *Tokens) revoke(w http.ResponseWriter, r *http.Request) {
	if !x.unlimited(w, r) {
		return
	}
	name := chi.URLParam(r, "name")
	err := x.store.Revoke(r.Context(), name)
	switch {
	case errors.Is(err, apitoken.ErrNotFound):
		httpjson.Error(w, http.StatusNotFound, fmt.Sprintf("no live token %q", name))
		return
	case err != nil:
		x.logger.Error("revoke token", "token", name, "err", err)
		httpjson.Error(w, http.StatusServiceUnavailable, "the token store is unavailable; try again shortly")
		return
	}
	x.logger.Info("token revoked", "token", name, "by", actorOf(r))
	httpjson.Write(w, http.StatusOK, map[string]any{"name": name, "revoked": true})
}

// actorOf names who made a request for the log: its token, or "api".
func actorOf(r *http.Request) string {
	if t, ok := apitoken.FromContext(r.Context()); ok && t.Name != "" {
		return "token:" + t.Name
	}
	return "api"
}

// nonNil is s, or an empty list for none, so JSON says [] rather than
// null: no channel patterns is a token that reaches every channel.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
