package redisstore_test

import (
	"context"
	"testing"

	"github.com/bobnet/bobnet/bot/bottest"
	"github.com/bobnet/bobnet/bot/redisstore"
)

// A request's draft message is claimed once: a second replica's claim
// gets the first one back. Its answer is recorded on it, and only on a
// draft that exists.
func TestDraftMessageClaimedOnceAndAnswered(t *testing.T) {
	t.Parallel()
	s := redisstore.NewInFlight(bottest.Redis(t), bottest.Prefix())
	ctx := context.Background()
	if ref, answer, err := s.DraftMessage(ctx, "r_none"); err != nil || ref != "" || answer != "" {
		t.Fatalf("no draft: %q %q %v", ref, answer, err)
	}
	if err := s.SetDraftAnswer(ctx, "r_none", "reply"); err != nil {
		t.Fatal(err)
	}
	if ref, answer, _ := s.DraftMessage(ctx, "r_none"); ref != "" || answer != "" {
		t.Fatalf("an answer made a draft that was never posted: %q %q", ref, answer)
	}
	if _, err := s.ClaimDraftMessage(ctx, "r_1", ""); err == nil {
		t.Fatal("an empty message was claimed")
	}
	if ref, _, _ := s.DraftMessage(ctx, "r_1"); ref != "" {
		t.Fatalf("a refused claim recorded %q", ref)
	}
	if kept, err := s.ClaimDraftMessage(ctx, "r_1", "$first"); err != nil || kept != "$first" {
		t.Fatalf("first claim kept %q, %v", kept, err)
	}
	if kept, err := s.ClaimDraftMessage(ctx, "r_1", "$second"); err != nil || kept != "$first" {
		t.Fatalf("second claim kept %q, %v; want the first", kept, err)
	}
	if err := s.SetDraftAnswer(ctx, "r_1", "preview"); err != nil {
		t.Fatal(err)
	}
	if ref, answer, err := s.DraftMessage(ctx, "r_1"); err != nil || ref != "$first" || answer != "preview" {
		t.Fatalf("draft = %q %q %v", ref, answer, err)
	}
}

func TestRunProgressMessageClaimedOnce(t *testing.T) {
	t.Parallel()
	s := redisstore.NewInFlight(bottest.Redis(t), bottest.Prefix())
	ctx := context.Background()
	if ref, err := s.RunProgressMessage(ctx, "u_1"); err != nil || ref != "" {
		t.Fatalf("no message yet: %q %v", ref, err)
	}
	if _, err := s.ClaimRunProgressMessage(ctx, "u_1", ""); err == nil {
		t.Fatal("an empty message was claimed")
	}
	if kept, err := s.ClaimRunProgressMessage(ctx, "u_1", "$a"); err != nil || kept != "$a" {
		t.Fatalf("first claim kept %q, %v", kept, err)
	}
	if kept, err := s.ClaimRunProgressMessage(ctx, "u_1", "$b"); err != nil || kept != "$a" {
		t.Fatalf("second claim kept %q, %v", kept, err)
	}
	if ref, err := s.RunProgressMessage(ctx, "u_1"); err != nil || ref != "$a" {
		t.Fatalf("message = %q %v", ref, err)
	}
}
