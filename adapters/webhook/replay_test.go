package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/signing"
)

// replays posts the same signed delivery n times, each with a fresh value
// of the unsigned header fresh, and returns the request ids answered;
// seen says the delivery was taken before, so even the first is a duplicate.
func replays(t *testing.T, url string, signed http.Header, fresh string, body []byte, n int, seen bool) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range n {
		h := signed.Clone()
		h.Set(fresh, fmt.Sprintf("replay-%d", i))
		status, out := post(t, url, h, body)
		if status != http.StatusAccepted {
			t.Fatalf("copy %d: %d %v", i, status, out)
		}
		ids[i] = fmt.Sprint(out["request_id"])
		if dup := out["duplicate"] == true; dup != (i > 0 || seen) {
			t.Fatalf("copy %d answered duplicate=%v: %v", i, dup, out)
		}
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("copies of one signed delivery made several requests: %v", ids)
		}
	}
	return ids
}

// A captured delivery replayed with fresh unsigned delivery headers is
// still the one delivery: Standard Webhooks deliveries are told apart by
// their signed webhook-id, sha256= ones by the digest of their body.
func TestReplayWithFreshDeliveryHeaderIsOneRequest(t *testing.T) {
	t.Parallel()
	e := newHookEnv(t)
	form := fixture(t, "generic-text.json")
	std, err := signing.StandardHeaders(stdSecret, "msg_replayed", time.Now(), form)
	if err != nil {
		t.Fatal(err)
	}
	ids := replays(t, e.URL+"/api/v1/hooks/forms", std, "X-Bobnet-Delivery", form, 4, false)

	gh := fixture(t, "github-issues-labeled.json")
	hub := githubHeaders(gh, "issues", "")
	ids = append(ids, replays(t, e.URL+"/api/v1/hooks/github", hub, "X-GitHub-Delivery", gh, 2, false)...)
	bobnetSigned := http.Header{}
	bobnetSigned.Set("X-GitHub-Event", "issues")
	bobnetSigned.Set("X-Bobnet-Signature", signing.SHA256Signature(ghSecret, gh))
	again := replays(t, e.URL+"/api/v1/hooks/github", bobnetSigned, "X-Bobnet-Delivery", gh, 2, true)
	if again[0] != ids[4] {
		t.Fatalf("the same body signed by X-Bobnet-Signature made request %s, X-Hub-Signature-256 made %s", again[0], ids[4])
	}

	for _, id := range []string{ids[0], ids[4]} {
		if st := e.WaitRequest(t, board.RequestID(id)); st.ProposalID == "" {
			t.Fatalf("no proposal: %+v", st)
		}
	}
	var proposals int
	if err := e.Store.Pool().QueryRow(context.Background(), "SELECT count(*) FROM proposals").Scan(&proposals); err != nil {
		t.Fatal(err)
	}
	if proposals != 2 || len(e.Model.Requests()) != 2 || e.deliveries(t) != 2 {
		t.Fatalf("%d proposals, %d model calls, %d delivery rows; want 2 each (one per signed delivery)", proposals, len(e.Model.Requests()), e.deliveries(t))
	}
}
