package apitoken_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/store/storetest"
)

func TestCheckChannelPattern(t *testing.T) {
	t.Parallel()
	for _, good := range []string{"slack:C0123", "slack:T0ONE/C0123", "slack:T0ONE/*", "slack:*", "matrix:!room:example.org",
		"matrix:*", "console:newsroom", "console:hook-ci", "console:*", "console:news*"} {
		if err := apitoken.CheckChannelPattern(good); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
	for _, tc := range []struct{ pattern, says string }{
		{"", "empty"},
		{"*", "known source"},
		{"slack:*/C1", "* may only end"},
		{"slack:T0ONE/**", "* may only end"},
		{"irc:#news", "known source"},
		{"newsroom", "known source"},
		{"slack:", "names no channel"},
		{"console:News Room", "space"},
		{"console:News", "console channel names"},
		{"slack:C\x00", "control"},
		{"slack:" + strings.Repeat("C", 300), "longer than 300"},
	} {
		err := apitoken.CheckChannelPattern(tc.pattern)
		if !errors.Is(err, apitoken.ErrBadChannels) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%q: %v, want ErrBadChannels saying %q", tc.pattern, err, tc.says)
		}
	}
}

func TestParseChannels(t *testing.T) {
	t.Parallel()
	got, err := apitoken.ParseChannels(" slack:T0ONE/* ,console:*,slack:T0ONE/*")
	if err != nil || !slices.Equal(got, []string{"slack:T0ONE/*", "console:*"}) {
		t.Fatalf("%q, %v", got, err)
	}
	if got, err := apitoken.ParseChannels("  "); err != nil || got != nil {
		t.Fatalf("no patterns: %q, %v", got, err)
	}
	for _, bad := range []string{"slack:T0ONE/*,", ",console:*", "console:*,,slack:*"} {
		if _, err := apitoken.ParseChannels(bad); !errors.Is(err, apitoken.ErrBadChannels) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	many := make([]string, apitoken.MaxChannelPatterns+1)
	for i := range many {
		many[i] = "console:c" + strings.Repeat("x", i)
	}
	if _, err := apitoken.CheckChannels(many); !errors.Is(err, apitoken.ErrBadChannels) {
		t.Fatalf("%d patterns: %v", len(many), err)
	}
}

func TestReaches(t *testing.T) {
	t.Parallel()
	tok := apitoken.Token{Name: "t", Channels: []string{"slack:T0ONE/*", "console:newsroom"}}
	for channel, want := range map[string]bool{
		"slack:T0ONE/C0123":  true,
		"slack:T0ONE/":       true,
		"slack:T0TWO/C0123":  false,
		"slack:C0123":        false,
		"slack:T0ONE":        false,
		"console:newsroom":   true,
		"console:newsroom2":  false,
		"console:hook-ci":    false,
		"matrix:!r:x.org":    false,
		"":                   false,
		"slack:T0ONE/C0123 ": true,
	} {
		if got := tok.Reaches(channel); got != want {
			t.Errorf("Reaches(%q) = %v, want %v", channel, got, want)
		}
	}
	for prefix, want := range map[string]bool{"slack:T0ONE/": true, "slack:T0ONE/C": true, "slack:": false, "console:": false, "console:newsroom": false} {
		if got := tok.ReachesAll(prefix); got != want {
			t.Errorf("ReachesAll(%q) = %v, want %v", prefix, got, want)
		}
	}
	all := apitoken.Token{Name: "all"}
	if all.Limited() || !all.Reaches("matrix:!r:x.org") || !all.ReachesAll("slack:") || !tok.Limited() {
		t.Fatal("a token without channel patterns must reach every channel")
	}
}

// TestCreateLimited: a token's patterns are checked before anything is
// stored, and come back from Lookup and List.
func TestCreateLimited(t *testing.T) {
	t.Parallel()
	s := apitoken.NewTokens(storetest.NewStore(t))
	ctx := context.Background()
	if _, err := s.CreateLimited(ctx, "bad", []apitoken.Scope{apitoken.ScopeRead}, "", []string{"console:*", "slack:*/x"}); !errors.Is(err, apitoken.ErrBadChannels) {
		t.Fatalf("bad pattern: %v", err)
	}
	if _, err := s.CreateLimited(ctx, "none", nil, "", []string{"console:*"}); !errors.Is(err, apitoken.ErrNoScopes) {
		t.Fatalf("no scopes: %v", err)
	}
	secret, err := s.CreateLimited(ctx, "tenant", []apitoken.Scope{apitoken.ScopeRead}, "", []string{"slack:T0ONE/*", " console:* "})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := s.Lookup(ctx, secret)
	if err != nil || !slices.Equal(tok.Channels, []string{"slack:T0ONE/*", "console:*"}) || !tok.Reaches("console:x") || tok.Reaches("slack:C1") {
		t.Fatalf("lookup = %+v, %v", tok, err)
	}
	list, err := s.List(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "tenant" || len(list[0].Channels) != 2 {
		t.Fatalf("list = %+v, %v (bad and none must not be stored)", list, err)
	}
}
