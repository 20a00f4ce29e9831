package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/go-chi/chi/v5"
	"go.yaml.in/yaml/v3"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

// policyFile is BOBNET_POLICY_FILE: the default policy and one per
// channel (or per source, as "matrix:*").
type policyFile struct {
	Default  *policyYAML           `yaml:"default"`
	Channels map[string]policyYAML `yaml:"channels"`
}

// policyYAML is a policy as written in the file; self_approval defaults
// to true, as it was before policies existed.
type policyYAML struct {
	Deciders     []string `yaml:"deciders"`
	Approvals    int      `yaml:"approvals"`
	SelfApproval *bool    `yaml:"self_approval"`
	AboveCards   *struct {
		Cards     int `yaml:"cards"`
		Approvals int `yaml:"approvals"`
	} `yaml:"above_cards"`
	Budget *struct {
		TokensPerDay int64 `yaml:"tokens_per_day"`
	} `yaml:"budget"`
}

func (p policyYAML) policy() board.Policy {
	out := board.Policy{Deciders: p.Deciders, Approvals: p.Approvals, SelfApproval: p.SelfApproval == nil || *p.SelfApproval}
	if out.Approvals == 0 {
		out.Approvals = 1
	}
	if a := p.AboveCards; a != nil {
		out.AboveCards = &board.AboveCards{Cards: a.Cards, Approvals: a.Approvals}
	}
	if b := p.Budget; b != nil {
		out.Budget = &board.Budget{TokensPerDay: b.TokensPerDay}
	}
	return out
}

// parsePolicies reads a policy file: unknown keys and invalid policies
// are errors naming where they are.
func parsePolicies(data []byte) (map[string]board.Policy, error) {
	var f policyFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	out := map[string]board.Policy{}
	if f.Default != nil {
		out[board.DefaultPolicyKey] = f.Default.policy()
	}
	for key, p := range f.Channels {
		if key == board.DefaultPolicyKey || !board.ValidPolicyKey(key) {
			return nil, fmt.Errorf("channels: %q is not a channel (<source>:<id>, e.g. slack:C0123) or <source>:*", key)
		}
		out[key] = p.policy()
	}
	for key, p := range out {
		if err := p.Validate(); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	return out, nil
}

// policyStore is what the policy API and the policy file need of the
// board store.
type policyStore interface {
	WriteFilePolicies(ctx context.Context, set map[string]board.Policy) error
	PutPolicy(ctx context.Context, key string, p board.Policy, actor string) error
	Policies(ctx context.Context) (map[string]board.Policy, error)
	Policy(ctx context.Context, key string) (board.Policy, error)
}

// loadPolicyFile writes BOBNET_POLICY_FILE's policies, if it is set; a file
// that cannot be used stops the start, naming the variable.
func loadPolicyFile(ctx context.Context, cfg Config, store policyStore) error {
	if cfg.PolicyFile == "" {
		return nil
	}
	data, err := os.ReadFile(cfg.PolicyFile)
	if err != nil {
		return fmt.Errorf("BOBNET_POLICY_FILE: %w", err)
	}
	set, err := parsePolicies(data)
	if err != nil {
		return fmt.Errorf("BOBNET_POLICY_FILE %s: %w", cfg.PolicyFile, err)
	}
	if err := store.WriteFilePolicies(ctx, set); err != nil {
		return fmt.Errorf("BOBNET_POLICY_FILE: %w", err)
	}
	return nil
}

// policyAPI serves /api/v1/policies; writes need the admin scope (the
// guard's default for routes it does not name).
type policyAPI struct {
	store  policyStore
	engine *bot.Engine
	logger *slog.Logger
}

func (a *policyAPI) routes(r chi.Router) {
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

func (a *policyAPI) list(w http.ResponseWriter, r *http.Request) {
	all, err := a.store.Policies(r.Context())
	if err != nil {
		a.logger.Error("list policies", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the policy store is unavailable; try again shortly"})
		return
	}
	def, ok := all[board.DefaultPolicyKey]
	defKey := board.DefaultPolicyKey
	if !ok {
		def, defKey = a.engine.BuiltinPolicy(""), bot.BuiltinPolicyKey
	}
	delete(all, board.DefaultPolicyKey)
	writeJSON(w, http.StatusOK, map[string]any{"default": policyView{Channel: board.DefaultPolicyKey, Key: defKey, Policy: def}, "channels": all})
}

// channelOf turns a policy key into a channel; "default" and "<source>:*"
// name no channel of their own.
func channelOf(key string) bot.Channel {
	src, id, _ := strings.Cut(key, ":")
	return bot.Channel{Source: bot.Source(src), ID: id}
}

func (a *policyAPI) get(w http.ResponseWriter, r *http.Request) {
	key := chi.URLParam(r, "channel")
	if !board.ValidPolicyKey(key) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("%q is not default, <source>:* or a channel like slack:C0123", key)})
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
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the policy store is unavailable; try again shortly"})
		return
	}
	writeJSON(w, http.StatusOK, policyView{Channel: key, Key: in.Key, Policy: in.Policy})
}

func (a *policyAPI) put(w http.ResponseWriter, r *http.Request) {
	key := chi.URLParam(r, "channel")
	var p board.Policy
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid policy JSON: " + err.Error()})
		return
	}
	actor := "api"
	if tok, ok := apitoken.FromContext(r.Context()); ok && tok.Name != "" {
		actor = "token:" + tok.Name
	}
	err := a.store.PutPolicy(r.Context(), key, p, actor)
	switch {
	case errors.Is(err, board.ErrInvalidPolicy):
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	case err != nil:
		a.logger.Error("put policy", "channel", key, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "the policy store is unavailable; try again shortly"})
		return
	}
	a.logger.Info("policy changed", "channel", key, "by", actor)
	writeJSON(w, http.StatusOK, policyView{Channel: key, Key: key, Policy: p})
}
