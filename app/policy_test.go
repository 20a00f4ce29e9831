package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPolicyFileErrors(t *testing.T) {
	t.Parallel()
	for name, text := range map[string]string{
		"unknown key":     "default: {deciders: [admins], approvals: 1, quorum: 2}\n",
		"unknown top key": "defaults: {deciders: [admins]}\n",
		"bad decider":     "channels: {\"slack:C1\": {deciders: [slak_group:S1]}}\n",
		"bad channel":     "channels: {general: {deciders: [admins]}}\n",
		"not yaml":        "default: [\n",
	} {
		if _, err := parsePolicies([]byte(text)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	set, err := parsePolicies([]byte("channels:\n  \"console:big\":\n    deciders: [requester, bob, carol]\n    approvals: 1\n    above_cards: {cards: 5, approvals: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p := set["console:big"]; !p.SelfApproval || p.AboveCards == nil || p.AboveCards.Approvals != 2 {
		t.Fatalf("console:big = %+v", p)
	}
	path := filepath.Join(t.TempDir(), "p.yaml")
	_ = os.WriteFile(path, []byte("default: {deciders: []}\n"), 0o600)
	err = loadPolicyFile(context.Background(), Config{PolicyFile: path}, nil)
	if err == nil || !strings.Contains(err.Error(), "BOBNET_POLICY_FILE") {
		t.Fatalf("a bad file: %v, want an error naming BOBNET_POLICY_FILE", err)
	}
}
