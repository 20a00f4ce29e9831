package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/bobnet/bobnet/store/storetest"
)

// token runs `bobnet token ...` against b's database.
func (b *bobnet) token(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runToken(args, func(k string) string { return b.vars[k] }, &out, &errb)
	if code != 0 {
		t.Logf("bobnet token %v: %s", args, errb.String())
	}
	return strings.TrimSpace(out.String()), code
}

func TestTokensScopesRevocationAndJSONErrors(t *testing.T) {
	t.Parallel()
	rc := newCallbackReceiver(t)
	b := newBobNet(t, hooksFile(rc.srv.URL))
	b.boot(t)

	reader, code := b.token(t, "create", "reader", "--scopes", "read")
	if code != 0 || !strings.HasPrefix(reader, "bobnet_") {
		t.Fatalf("create reader: %q %d", reader, code)
	}
	bound, _ := b.token(t, "create", "alice-ci", "--scopes", "propose,approve,read", "--user", "alice")
	if _, code := b.token(t, "create", "reader", "--scopes", "read"); code == 0 {
		t.Fatal("a second live token named reader was created")
	}
	if _, code := b.token(t, "create", "x", "--scopes", "root"); code != 2 {
		t.Fatalf("unknown scope: exit %d", code)
	}

	// The bound token proposes as alice, and only as alice.
	status, out := b.api(t, bound, "POST", "/api/v1/channels/general/messages", map[string]string{"user": "mallory", "text": "plan our newspaper"})
	if status != http.StatusForbidden || !strings.Contains(fmt.Sprint(out["error"]), `acts only for user "alice"`) {
		t.Fatalf("bound token as mallory: %d %v", status, out)
	}
	status, out = b.api(t, bound, "POST", "/api/v1/channels/general/messages", map[string]string{"user": "alice", "text": "plan our newspaper"})
	if status != http.StatusAccepted {
		t.Fatalf("bound token as alice: %d %v", status, out)
	}
	p := b.proposalOf(t, out["request_id"].(string))
	approve := fmt.Sprintf("/api/v1/proposals/%s/approve", p["id"])

	// A read token reads but cannot approve.
	if status, _ := b.api(t, reader, "GET", "/api/v1/proposals/"+p["id"].(string), nil); status != http.StatusOK {
		t.Fatalf("reader GET: %d", status)
	}
	status, out = b.api(t, reader, "POST", approve, map[string]string{"user": "alice"})
	if status != http.StatusForbidden || out["needs"] != "approve" {
		t.Fatalf("reader approving: %d %v", status, out)
	}
	// Someone the engine does not let decide: 403 naming who may.
	status, out = b.api(t, bootstrap, "POST", approve, map[string]string{"user": "mallory"})
	if status != http.StatusForbidden || out["requested_by"] != "alice" || !strings.Contains(fmt.Sprint(out["error"]), "BOBNET_ADMINS") {
		t.Fatalf("mallory approving: %d %v", status, out)
	}
	status, out = b.api(t, bound, "POST", approve, map[string]string{"user": "alice"})
	if status != http.StatusOK {
		t.Fatalf("alice approving: %d %v", status, out)
	}
	boardURL := out["board_url"]
	status, out = b.api(t, bound, "POST", approve, map[string]string{"user": "alice"})
	if status != http.StatusConflict || out["board_url"] != boardURL || boardURL == nil {
		t.Fatalf("second approve: %d %v (board %v)", status, out, boardURL)
	}

	// A revised proposal answers 409 naming the one that replaced it.
	_, out = b.api(t, bound, "POST", "/api/v1/channels/general/messages", map[string]string{"user": "alice", "text": "plan our newspaper"})
	old := b.proposalOf(t, out["request_id"].(string))
	status, out = b.api(t, bound, "POST", fmt.Sprintf("/api/v1/proposals/%s/revise", old["id"]), map[string]string{"user": "alice", "feedback": "add a fact checker"})
	if status != http.StatusAccepted {
		t.Fatalf("revise: %d %v", status, out)
	}
	next := b.proposalOf(t, out["request_id"].(string))
	status, out = b.api(t, bound, "POST", fmt.Sprintf("/api/v1/proposals/%s/approve", old["id"]), map[string]string{"user": "alice"})
	if status != http.StatusConflict || out["superseded_by"] != next["id"] {
		t.Fatalf("approving the superseded version: %d %v, want superseded_by %v", status, out, next["id"])
	}

	// Revoked: refused at once.
	if _, code := b.token(t, "revoke", "reader"); code != 0 {
		t.Fatal("revoke failed")
	}
	status, out = b.api(t, reader, "GET", "/api/v1/proposals/"+p["id"].(string), nil)
	if status != http.StatusUnauthorized || !strings.Contains(fmt.Sprint(out["error"]), "revoked") {
		t.Fatalf("revoked reader: %d %v", status, out)
	}
	list, _ := b.token(t, "list")
	if !strings.Contains(list, "reader") || !strings.Contains(list, "alice-ci") || strings.Contains(list, reader) {
		t.Fatalf("list:\n%s", list)
	}

	// The audit log names the token beside the user.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, b.vars["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var actor string
	var detail json.RawMessage
	if err := conn.QueryRow(ctx, `SELECT actor, detail FROM audit_events WHERE action = 'approved'`).Scan(&actor, &detail); err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	_ = json.Unmarshal(detail, &d)
	if actor != "alice" || d["via"] != "token:alice-ci" {
		t.Fatalf("audit: %s %s", actor, detail)
	}

	// Unknown routes and wrong methods answer JSON too.
	if status, out := b.api(t, bootstrap, "GET", "/api/v1/nothing-here", nil); status != http.StatusNotFound || out["error"] == nil {
		t.Fatalf("unknown route: %d %v", status, out)
	}
	if status, out := b.api(t, bootstrap, "DELETE", approve, nil); status != http.StatusMethodNotAllowed || out["error"] == nil {
		t.Fatalf("wrong method: %d %v", status, out)
	}
}

// TestTokenFindsTheDatabaseOfMakeRun: beside a running `make run`, whose
// folder holds the services' addresses, `bobnet token` needs no
// DATABASE_URL; with none running it says how to give it one.
func TestTokenFindsTheDatabaseOfMakeRun(t *testing.T) {
	t.Parallel()
	if os.Getenv("DATABASE_URL") == "" {
		t.Skip("DATABASE_URL is not set")
	}
	runDir := t.TempDir()
	env := map[string]string{"BOBNET_RUN_DIR": runDir}
	var out, errb bytes.Buffer
	if code := runToken([]string{"list"}, func(k string) string { return env[k] }, &out, &errb); code != 2 ||
		!strings.Contains(errb.String(), "DATABASE_URL: required") || !strings.Contains(errb.String(), "make run") {
		t.Fatalf("no make run: code %d, %q", code, errb.String())
	}
	line := "DATABASE_URL=" + storetest.NewDatabase(t) + "\nREDIS_URL=redis://127.0.0.1:1/0\n"
	if err := os.WriteFile(filepath.Join(runDir, "env"), []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := runToken([]string{"create", "ci", "--scopes", "read"}, func(k string) string { return env[k] }, &out, &errb); code != 0 ||
		!strings.HasPrefix(out.String(), "bobnet_") || !strings.Contains(errb.String(), "using the database of `make run`") {
		t.Fatalf("beside make run: code %d, out %q, err %q", code, out.String(), errb.String())
	}
}
