package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/store/storetest"
)

func TestMatrixSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewStore(t)
	const user = "@bobnet:example.org"

	if _, err := s.MatrixSession(ctx, user); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("no session saved: %v", err)
	}
	if nb, err := s.MatrixNextBatch(ctx, user); err != nil || nb != "" {
		t.Fatalf("next batch before the first sync: %q, %v", nb, err)
	}
	if f, err := s.MatrixFilterID(ctx, user); err != nil || f != "" {
		t.Fatalf("filter before the first sync: %q, %v", f, err)
	}

	// A row holding only the sync position is no session.
	if err := s.SaveMatrixNextBatch(ctx, user, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveMatrixFilterID(ctx, user, "f1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MatrixSession(ctx, user); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("session of a row without a token: %v", err)
	}
	// An access token given in the settings saves the device alone.
	if err := s.SaveMatrixSession(ctx, user, board.MatrixSession{DeviceID: "DEV0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MatrixSession(ctx, user); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("session without a token: %v", err)
	}

	want := board.MatrixSession{DeviceID: "DEV1", AccessToken: "tok1"}
	if err := s.SaveMatrixSession(ctx, user, want); err != nil {
		t.Fatal(err)
	}
	if got, err := s.MatrixSession(ctx, user); err != nil || got != want {
		t.Fatalf("session %+v, %v; want %+v", got, err, want)
	}
	// The sync position belongs to the account and survives a new login.
	if nb, err := s.MatrixNextBatch(ctx, user); err != nil || nb != "s1" {
		t.Fatalf("next batch after a login: %q, %v", nb, err)
	}
	if f, err := s.MatrixFilterID(ctx, user); err != nil || f != "f1" {
		t.Fatalf("filter after a login: %q, %v", f, err)
	}
	if err := s.SaveMatrixNextBatch(ctx, user, "s2"); err != nil {
		t.Fatal(err)
	}
	if nb, err := s.MatrixNextBatch(ctx, user); err != nil || nb != "s2" {
		t.Fatalf("next batch: %q, %v", nb, err)
	}
	if got, err := s.MatrixSession(ctx, user); err != nil || got != want {
		t.Fatalf("session after a sync %+v, %v", got, err)
	}
	if _, err := s.MatrixSession(ctx, "@other:example.org"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("another user's session: %v", err)
	}
}

func TestMatrixPreviewsAndThreads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewStore(t)
	const room, other = "!room:example.org", "!other:example.org"

	if _, err := s.MatrixPreviewProposal(ctx, room, "$p1"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("no preview: %v", err)
	}
	if _, err := s.MatrixThreadProposal(ctx, room, "$t"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("no thread proposal: %v", err)
	}
	if _, err := s.MatrixPreviewThread(ctx, room, "prop_a"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("no preview thread: %v", err)
	}

	if err := s.SaveMatrixPreview(ctx, room, "$p1", "$t", "prop_a"); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveMatrixPreview(ctx, room, "$p2", "$t", "prop_b"); err != nil {
		t.Fatal(err)
	}
	// Saving the same event again changes nothing.
	if err := s.SaveMatrixPreview(ctx, room, "$p1", "$elsewhere", "prop_c"); err != nil {
		t.Fatal(err)
	}
	if p, err := s.MatrixPreviewProposal(ctx, room, "$p1"); err != nil || p != "prop_a" {
		t.Fatalf("preview $p1: %q, %v", p, err)
	}
	if _, err := s.MatrixPreviewProposal(ctx, other, "$p1"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("preview in another room: %v", err)
	}
	if p, err := s.MatrixThreadProposal(ctx, room, "$t"); err != nil || p != "prop_b" {
		t.Fatalf("thread proposal %q, %v; want the newest, prop_b", p, err)
	}
	if th, err := s.MatrixPreviewThread(ctx, room, "prop_a"); err != nil || th != "$t" {
		t.Fatalf("preview thread %q, %v", th, err)
	}
	if _, err := s.MatrixPreviewThread(ctx, other, "prop_a"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("preview thread in another room: %v", err)
	}

	if ok, err := s.IsMatrixThread(ctx, room, "$t"); err != nil || ok {
		t.Fatalf("thread before it was saved: %v, %v", ok, err)
	}
	for range 2 {
		if err := s.SaveMatrixThread(ctx, room, "$t"); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := s.IsMatrixThread(ctx, room, "$t"); err != nil || !ok {
		t.Fatalf("saved thread: %v, %v", ok, err)
	}
	if ok, err := s.IsMatrixThread(ctx, other, "$t"); err != nil || ok {
		t.Fatalf("thread in another room: %v, %v", ok, err)
	}
}

func TestMatrixCrossSigning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewStore(t)
	const user = "@bobnet:example.org"

	if _, err := s.MatrixCrossSigning(ctx, user); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("none saved: %v", err)
	}
	first := board.MatrixCrossSigning{MasterKey: "master1", Sealed: []byte{1, 2, 3}}
	if err := s.AddMatrixCrossSigning(ctx, user, first); err != nil {
		t.Fatal(err)
	}
	// A replica saving its own afterwards keeps the first.
	if err := s.AddMatrixCrossSigning(ctx, user, board.MatrixCrossSigning{MasterKey: "master2", Sealed: []byte{4}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.MatrixCrossSigning(ctx, user)
	if err != nil || got.MasterKey != first.MasterKey || !bytes.Equal(got.Sealed, first.Sealed) {
		t.Fatalf("cross-signing %+v, %v; want the first saved", got, err)
	}
}

func TestMatrixReviews(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := storetest.NewStore(t)
	const room = "!room:example.org"

	if _, err := s.MatrixReview(ctx, room, "$a1"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("no announcement: %v", err)
	}
	if _, err := s.LatestMatrixReview(ctx, room, "run_1", "c_1"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("no latest announcement: %v", err)
	}
	r1 := board.MatrixReview{Thread: "$t", Run: "run_1", Card: "c_1", Handle: "writer", Round: 0}
	r2 := board.MatrixReview{Thread: "$t", Run: "run_1", Card: "c_1", Handle: "writer", Round: 1}
	if err := s.SaveMatrixReview(ctx, room, "$a1", r1); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveMatrixReview(ctx, room, "$a2", r2); err != nil {
		t.Fatal(err)
	}
	// Saving the same event again changes nothing.
	if err := s.SaveMatrixReview(ctx, room, "$a1", r2); err != nil {
		t.Fatal(err)
	}
	if got, err := s.MatrixReview(ctx, room, "$a1"); err != nil || got != r1 {
		t.Fatalf("announcement $a1 %+v, %v; want %+v", got, err, r1)
	}
	if evt, err := s.LatestMatrixReview(ctx, room, "run_1", "c_1"); err != nil || evt != "$a2" {
		t.Fatalf("latest announcement %q, %v; want $a2", evt, err)
	}
	if _, err := s.LatestMatrixReview(ctx, room, "run_1", "c_2"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("another card's announcement: %v", err)
	}
	if _, err := s.MatrixReview(ctx, "!other:example.org", "$a1"); !errors.Is(err, board.ErrNotFound) {
		t.Fatalf("announcement in another room: %v", err)
	}
}
