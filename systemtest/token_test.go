package systemtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// token runs `bobnet token ...` against b's database and returns what it
// printed (trimmed) and its exit code; it logs what a failure said.
func (b *bobnet) token(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, errs, code := b.tokenCmd(t, args...)
	if code != 0 {
		t.Logf("bobnet token %v: %s", args, errs)
	}
	return strings.TrimSpace(out), code
}

// tokenCmd runs `bobnet token ...`, the built command (built on its first
// use), against b's database, and returns its output, its errors and its
// exit code.
func (b *bobnet) tokenCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	if b.bin == "" {
		b.bin = buildBobnet(t)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(b.bin, append([]string{"token"}, args...)...)
	cmd.Env = append(os.Environ(), "DATABASE_URL="+b.vars["DATABASE_URL"])
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("bobnet token %v: %v", args, err)
		}
		code = exit.ExitCode()
	}
	return out.String(), errb.String(), code
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
