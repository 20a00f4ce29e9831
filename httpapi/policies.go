package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/httpjson"
)

// PolicyStore is what the policy routes need of the board store;
// *store.Store is one.
type PolicyStore interface {
	PutPolicy(ctx context.Context, key string, p board.Policy, actor string) error
	Policies(ctx context.Context) (map[string]board.Policy, error)
	Policy(ctx context.Context, key string) (board.Policy, error)
}

// PolicyEngine is what the policy routes need of the bot engine: the
// policy in force where none is stored; *bot.Engine is one.
type PolicyEngine interface {
	BuiltinPolicy(src board.Source) board.Policy
	PolicyFor(ctx context.Context, ch board.Channel) (board.PolicyInForce, error)
}

// Policies serves /api/v1/policies; writes need the admin scope (the
// token guard's default for routes it does not name).
type Policies struct {
	store  PolicyStore
	engine PolicyEngine
	logger *slog.Logger
}

// NewPolicies returns the policy routes over store and engine.
func NewPolicies(store PolicyStore, engine PolicyEngine, logger *slog.Logger) *Policies {
	return &Policies{store: store, engine: engine, logger: logger}
}

// Routes mounts the policy routes; the caller puts the guards in front.
func (a *Policies) Routes(r chi.Router) {
	r.Get("/api/v1/policies", a.list)
	r.Get("/api/v1/policies/{channel}", a.get)
	r.Put("/api/v1/policies/{channel}", a.put)
}

// policyView is one policy as the API shows it: the channel asked about,
// the key the policy in force is stored under, and the policy.
type policyView struct {
	Channel string       `json:"channel"`
	Key     string       `json:"key"`
	Policy  board.Policy `json:"policy"`
}

func (a *Policies) list(w http.ResponseWriter, r *http.Request) {
	all, err := a.store.Policies(r.Context())
	if err != nil {
		a.logger.Error("list policies", "err", err)
		httpjson.Error(w, http.StatusServiceUnavailable, "the policy store is unavailable; try again shortly")
		return
	}
	def, ok := all[board.DefaultPolicyKey]
	defKey := board.DefaultPolicyKey
	if !ok {
		def, defKey = a.engine.BuiltinPolicy(""), bot.BuiltinPolicyKey
	}
	delete(all, board.DefaultPolicyKey)
	for key := range all {
		if !reachesPolicy(r, key) {
			delete(all, key)
		}
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"default": policyView{Channel: board.DefaultPolicyKey, Key: defKey, Policy: def}, "channels": all})
}

// channelOf turns a policy key into a channel; "default" and "<source>:*"
// name no channel of their own.
func channelOf(key string) board.Channel {
	src, id, _ := strings.Cut(key, ":")
	return board.Channel{Source: board.Source(src), ID: id}
}

// reachesPolicy reports whether the request's token may reach the
// policy stored under key: a channel's when it reaches the channel, a
// "<source>:<prefix>*" one when it reaches every channel of the prefix
// (a token for slack:T0ONE/* reaches the policy slack:T0ONE/*, not
// slack:*). The default policy is read by every token (it is in force
// wherever no other is) and set only by one that reaches every channel.
func reachesPolicy(r *http.Request, key string) bool {
	t, ok := apitoken.FromContext(r.Context())
	switch {
	case !ok || !t.Limited():
		return true
	case key == board.DefaultPolicyKey:
		return r.Method == http.MethodGet || r.Method == http.MethodHead
	}
	if prefix, ok := strings.CutSuffix(key, "*"); ok {
		return t.ReachesAll(prefix)
	}
	return t.Reaches(key)
}

// policyKey is the key a policy's URL names, percent-decoded: a Slack
// channel of multi-workspace mode, slack:T0123/C0123, comes as
// slack:T0123%2FC0123, and a client may escape any character. A URL that
// names no valid key is answered 400 here, and ok is false; one the
// request's token may not reach is answered 404.
func policyKey(w http.ResponseWriter, r *http.Request) (key string, ok bool) {
	raw := chi.URLParam(r, "channel")
	key, err := url.PathUnescape(raw)
	if err != nil {
		key = raw
	}
	if err != nil || !board.ValidPolicyKey(key) {
		httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("%q is not default, <source>:* or a channel like slack:C0123", key))
		return "", false
	}
	if !reachesPolicy(r, key) {
		httpjson.Error(w, http.StatusNotFound, "no channel "+key)
		return "", false
	}
	return key, true
}

func (a *Policies) get(w http.ResponseWriter, r *http.Request) {
	key, ok := policyKey(w, r)
	if !ok {
		return
	}
	var in board.PolicyInForce
	var err error
	if key == board.DefaultPolicyKey {
		// The default is asked for by name, not looked up as a channel.
		in.Key = key
		if in.Policy, err = a.store.Policy(r.Context(), key); errors.Is(err, board.ErrNotFound) {
			in, err = board.PolicyInForce{Key: bot.BuiltinPolicyKey, Policy: a.engine.BuiltinPolicy("")}, nil
		}
	} else {
		in, err = a.engine.PolicyFor(r.Context(), channelOf(key))
	}
	if err != nil {
		a.logger.Error("read policy", "channel", key, "err", err)
		httpjson.Error(w, http.StatusServiceUnavailable, "the policy store is unavailable; try again shortly")
		return
	}
	httpjson.Write(w, http.StatusOK, policyView{Channel: key, Key: in.Key, Policy: in.Policy})
}

func (a *Policies) put(w http.ResponseWriter, r *http.Request) {
	key, ok := policyKey(w, r)
	if !ok {
		return
	}
	var p board.Policy
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		httpjson.Error(w, http.StatusBadRequest, "invalid policy JSON: "+err.Error())
		return
	}
	actor := "api"
	if tok, ok := apitoken.FromContext(r.Context()); ok && tok.Name != "" {
		actor = "token:" + tok.Name
	}
	err := a.store.PutPolicy(r.Context(), key, p, actor)
	switch {
	case errors.Is(err, board.ErrInvalidPolicy):
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	case err != nil:
		a.logger.Error("put policy", "channel", key, "err", err)
		httpjson.Error(w, http.StatusServiceUnavailable, "the policy store is unavailable; try again shortly")
		return
	}
	a.logger.Info("policy changed", "channel", key, "by", actor)
	httpjson.Write(w, http.StatusOK, policyView{Channel: key, Key: key, Policy: p})
}
