package app

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"

	"github.com/bobnet/bobnet/board"
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

// policyWriter is what the policy file needs of the board store.
type policyWriter interface {
	WriteFilePolicies(ctx context.Context, set map[string]board.Policy) error
}

// loadPolicyFile writes BOBNET_POLICY_FILE's policies, if it is set; a file
// that cannot be used stops the start, naming the variable.
func loadPolicyFile(ctx context.Context, cfg Config, store policyWriter) error {
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
