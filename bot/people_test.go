package bot_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
	"github.com/bobnet/bobnet/bot/bottest"
)

// boardIn approves the newspaper board and moves it to channel, as if it
// had been made there.
func boardIn(t *testing.T, env *bottest.Env, channel string) board.ID {
	t.Helper()
	id := approvedNewspaper(t, env)
	if _, err := env.Store.Pool().Exec(context.Background(), `UPDATE boards SET channel = $2 WHERE id = $1`, id, channel); err != nil {
		t.Fatal(err)
	}
	return id
}

func assigneeOf(t *testing.T, env *bottest.Env, id board.ID, number int) (assignee, status string) {
	t.Helper()
	if err := env.Store.Pool().QueryRow(context.Background(), `SELECT assignee, status FROM cards WHERE board_id = $1 AND number = $2`, id, number).Scan(&assignee, &status); err != nil {
		t.Fatal(err)
	}
	return assignee, status
}

// TestAssignPeopleByID: a card is assigned to a person by their person
// id, only to a person of its board's workspace; roles stay roles; a name
// written as a mention is refused, and a refusal changes nothing.
func TestAssignPeopleByID(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	id := boardIn(t, env, "slack:T_A/C1")
	ch := board.Channel{Source: board.SourceSlack, ID: "T_A/C1"}

	up, err := env.Engine.AssignCard(ctx, ch, "slack:T_A/U_BOB", "NEWS-1", "slack:T_A/U123")
	if err != nil || up.Card.Assignee != "slack:T_A/U123" {
		t.Fatalf("assign a person of the workspace: %+v, %v", up.Card, err)
	}
	if txt := bot.CardUpdateText(up, ""); !strings.Contains(txt, "assigned to @U123 (was ") {
		t.Errorf("update text = %q", txt)
	}

	for _, who := range []string{
		"slack:T_B/U123",       // another workspace's person
		"slack:U123",           // a single-workspace id on a multi-workspace board
		"matrix:@alice:ex.org", // a Matrix person on a Slack board
		"@alice",               // a name, not a person
		"<@U123>",              // a raw mention the adapter did not read
		"slack:T_A/alice",      // no Slack user id
	} {
		_, err := env.Engine.AssignCard(ctx, ch, "slack:T_A/U_BOB", "NEWS-1", who)
		if !errors.Is(err, board.ErrInvalidChange) {
			t.Errorf("assign %q: %v, want an invalid change", who, err)
		}
		if !strings.HasPrefix(bot.Explain(err), "That change isn't possible: ") {
			t.Errorf("assign %q: explained as %q", who, bot.Explain(err))
		}
		if a, _ := assigneeOf(t, env, id, 1); a != "slack:T_A/U123" {
			t.Fatalf("after refusing %q the assignee is %q", who, a)
		}
	}
	// The REST API names the card by id and no channel: the same check.
	cardID := up.Card.ID
	other := "slack:T_B/U9"
	if _, err := env.Engine.EditCard(ctx, bot.CardEdit{ID: cardID, User: "api", Via: "api", Assignee: &other}); !errors.Is(err, board.ErrInvalidChange) {
		t.Errorf("API assign of another workspace's person: %v", err)
	}

	// Roles stay roles, by the deployment's profile names; none unassigns.
	up, err = env.Engine.AssignCard(ctx, ch, "slack:T_A/U_BOB", "NEWS-1", "researcher")
	if err != nil || up.Card.Assignee != "Researcher" {
		t.Fatalf("assign a role: %+v, %v", up.Card, err)
	}
	if _, err := env.Engine.AssignCard(ctx, ch, "slack:T_A/U_BOB", "NEWS-1", "Astronaut"); !errors.Is(err, bot.ErrUnknownProfile) {
		t.Errorf("unknown role: %v", err)
	}
	if up, err = env.Engine.AssignCard(ctx, ch, "slack:T_A/U_BOB", "NEWS-1", "none"); err != nil || up.Card.Assignee != "" {
		t.Fatalf("unassign: %+v, %v", up.Card, err)
	}
}

// TestAssignMatrixPeople: a Matrix user may be assigned on a Matrix
// room's board; a Slack person may not.
func TestAssignMatrixPeople(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	boardIn(t, env, "matrix:!news:example.org")
	ch := board.Channel{Source: board.SourceMatrix, ID: "!news:example.org"}
	up, err := env.Engine.AssignCard(ctx, ch, "@bob:example.org", "NEWS-1", "matrix:@alice:example.org")
	if err != nil || up.Card.Assignee != "matrix:@alice:example.org" {
		t.Fatalf("assign a Matrix user: %+v, %v", up.Card, err)
	}
	if txt := bot.CardUpdateText(up, ""); !strings.Contains(txt, "assigned to @alice:example.org (was ") {
		t.Errorf("update text = %q", txt)
	}
	if _, err := env.Engine.AssignCard(ctx, ch, "@bob:example.org", "NEWS-1", "slack:U123"); !errors.Is(err, board.ErrInvalidChange) {
		t.Errorf("a Slack person on a Matrix board: %v", err)
	}
}

// TestAssignedCardsByID: a person's home lists exactly the cards assigned
// to their person id on their own workspace's boards, and moves only
// those; a person of another workspace, whatever the card's id, moves
// nothing.
func TestAssignedCardsByID(t *testing.T) {
	t.Parallel()
	env := bottest.New(t)
	ctx := context.Background()
	id := boardIn(t, env, "slack:T_A/C1")
	ch := board.Channel{Source: board.SourceSlack, ID: "T_A/C1"}
	up, err := env.Engine.AssignCard(ctx, ch, "slack:T_A/U_BOB", "NEWS-1", "slack:T_A/U1")
	if err != nil {
		t.Fatal(err)
	}
	card := up.Card.ID
	// A card holding a name or the same user id of another workspace is
	// nobody's in particular (written as a plan might have).
	if _, err := env.Store.Pool().Exec(ctx, `UPDATE cards SET assignee = CASE number WHEN 2 THEN 'U1' WHEN 3 THEN 'slack:T_B/U1' ELSE assignee END WHERE board_id = $1`, id); err != nil {
		t.Fatal(err)
	}

	mine, err := env.Engine.CardsAssignedTo(ctx, "slack:T_A/U1", 10)
	if err != nil || len(mine) != 1 || mine[0].Card.ID != card {
		t.Fatalf("cards of slack:T_A/U1 = %+v, %v", mine, err)
	}
	for _, who := range []string{"slack:T_B/U1", "slack:U1"} {
		if theirs, err := env.Engine.CardsAssignedTo(ctx, who, 10); err != nil || len(theirs) != 0 {
			t.Errorf("cards of %s = %+v, %v", who, theirs, err)
		}
	}
	if _, err := env.Engine.CardsAssignedTo(ctx, "Researcher", 10); !errors.Is(err, bot.ErrNoHome) {
		t.Errorf("cards of a role: %v", err)
	}

	// A person of another workspace is answered as for a card nobody
	// has; one of the workspace it is not assigned to, or no person, is
	// refused.
	_, errNone := env.Engine.MoveAssignedCard(ctx, "U1", "slack:T_B/U1", board.NewCardID(), "In Progress", "slack")
	for _, tc := range []struct {
		who  string
		want error
	}{
		{"slack:T_B/U1", bot.ErrNoCard}, {"slack:U1", bot.ErrNoCard},
		{"slack:T_A/U2", bot.ErrForbidden}, {"Researcher", bot.ErrForbidden}, {"", bot.ErrForbidden},
	} {
		_, err := env.Engine.MoveAssignedCard(ctx, "U1", tc.who, card, "In Progress", "slack")
		if !errors.Is(err, tc.want) {
			t.Errorf("move by %q: %v, want %v", tc.who, err, tc.want)
		}
		if tc.want == bot.ErrNoCard && bot.Explain(err) != bot.Explain(errNone) {
			t.Errorf("move by %q explained as %q, not as for a card nobody has: %q", tc.who, bot.Explain(err), bot.Explain(errNone))
		}
	}
	if _, st := assigneeOf(t, env, id, 1); st != "Ready" {
		t.Fatalf("a refused move changed the card to %s", st)
	}
	if up, err := env.Engine.MoveAssignedCard(ctx, "U1", "slack:T_A/U1", card, "In Progress", "slack"); err != nil || up.Card.Status != "In Progress" {
		t.Fatalf("move by the assignee: %+v, %v", up.Card, err)
	}

	// The same person id on a board of another workspace (a plan wrote
	// it there) is neither listed nor moved.
	if _, err := env.Store.Pool().Exec(ctx, `UPDATE boards SET channel = 'slack:T_B/C1' WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	if mine, err := env.Engine.CardsAssignedTo(ctx, "slack:T_A/U1", 10); err != nil || len(mine) != 0 {
		t.Errorf("cards of slack:T_A/U1 on another workspace's board = %+v, %v", mine, err)
	}
	if _, err := env.Engine.MoveAssignedCard(ctx, "U1", "slack:T_A/U1", card, "Review", "slack"); !errors.Is(err, bot.ErrNoCard) {
		t.Errorf("move on another workspace's board: %v", err)
	}
}
