package systemtest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bobnet/bobnet/board"
)

// TestAssignPeopleOverAPI: PATCH /api/v1/cards/{id} takes a role, a
// person id of the board's workspace or none; a person of another
// workspace or platform, or a name written as a mention, is a 400 that
// changes nothing. The board page shows a person by a readable label.
func TestAssignPeopleOverAPI(t *testing.T) {
	t.Parallel()
	a := start(t, withEnv(map[string]string{"BOBNET_API_TOKEN": "test-token"}))
	code, approved := a.approve(t, a.propose(t, "newsroom", "alice"), "alice")
	if code != http.StatusOK {
		t.Fatalf("approve: %d %+v", code, approved)
	}
	id := board.ID(approved.BoardID)
	// The board is a single-workspace Slack channel's.
	pool, err := pgxpool.New(context.Background(), a.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pool.Exec(context.Background(), `UPDATE boards SET channel = 'slack:C_NEWS' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	card := boardCards(t, a, id)["NEWS-1"]

	patch := func(assignee string) (int, cardJSON, string) {
		t.Helper()
		var out struct {
			cardJSON
			Error string `json:"error"`
		}
		code := a.call(t, "PATCH", "/api/v1/cards/"+card.ID, map[string]any{"user": "alice", "assignee": assignee}, &out)
		return code, out.cardJSON, out.Error
	}
	for _, tc := range []struct{ in, want string }{
		{"slack:U_ANN", "slack:U_ANN"},
		{"researcher", "Researcher"},
		{"none", ""},
		{"slack:U_ANN", "slack:U_ANN"},
	} {
		if code, c, msg := patch(tc.in); code != http.StatusOK || c.Assignee != tc.want {
			t.Fatalf("PATCH assignee %q: %d %q %s, want %q", tc.in, code, c.Assignee, msg, tc.want)
		}
	}
	for _, in := range []string{"slack:T_OTHER/U_ANN", "matrix:@ann:example.org", "@ann", "<@U_ANN>", "slack:C_NEWS"} {
		code, _, msg := patch(in)
		if code != http.StatusBadRequest || msg == "" {
			t.Errorf("PATCH assignee %q: %d %q, want 400", in, code, msg)
		}
		if got := boardCards(t, a, id)["NEWS-1"]; got.Assignee != "slack:U_ANN" || got.Version != 5 {
			t.Fatalf("a refused PATCH (%q) changed the card: %+v", in, got)
		}
	}

	resp, err := http.Get(board.BoardURL(a.URL, id))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(page), `<span class="tag">@U_ANN</span>`) || strings.Contains(string(page), "slack:U_ANN") {
		t.Errorf("the board page does not show the person as @U_ANN")
	}
}
