package migrations_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/migrations"
	"github.com/bobnet/bobnet/plan"
	"github.com/bobnet/bobnet/store/storetest"
)

func TestAllNumberedWithHeader(t *testing.T) {
	t.Parallel()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) == 0 {
		t.Fatal("no migrations")
	}
	for i, m := range all {
		if m.Version != i+1 {
			t.Errorf("%s has version %d, want %d", m.Name, m.Version, i+1)
		}
		first, _, _ := strings.Cut(m.SQL, "\n")
		if !strings.HasPrefix(first, "-- ") || len(first) < 20 {
			t.Errorf("%s: first line must say what it does, got %q", m.Name, first)
		}
	}
}

func TestApplyFromEmptyAndAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	all, _ := migrations.All()
	n, err := migrations.Apply(ctx, pool, storetest.Logger(t))
	if err != nil || n != len(all) {
		t.Fatalf("first apply: %d, %v", n, err)
	}
	var tables int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'
		AND table_name IN ('boards','cards','card_links','proposals','audit_events','channel_bindings','webhook_deliveries')`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 7 {
		t.Errorf("tables = %d, want 7", tables)
	}
	n, err = migrations.Apply(ctx, pool, storetest.Logger(t))
	if err != nil || n != 0 {
		t.Fatalf("second apply: %d, %v", n, err)
	}
}

func TestApplyConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewDatabase(t)
	var wg sync.WaitGroup
	applied := make([]int, 4)
	errs := make([]error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pool, err := pgxpool.New(ctx, url)
			if err != nil {
				errs[i] = err
				return
			}
			defer pool.Close()
			applied[i], errs[i] = migrations.Apply(ctx, pool, storetest.Logger(t))
		}()
	}
	wg.Wait()
	total := 0
	for i := range 4 {
		if errs[i] != nil {
			t.Fatalf("replica %d: %v", i, errs[i])
		}
		total += applied[i]
	}
	if all, _ := migrations.All(); total != len(all) {
		t.Errorf("applied %d migrations in all, want %d", total, len(all))
	}
}

func TestApplyRefusesNewerDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := migrations.Apply(ctx, pool, storetest.Logger(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future.sql')`); err != nil {
		t.Fatal(err)
	}
	if _, err := migrations.Apply(ctx, pool, storetest.Logger(t)); err == nil || !strings.Contains(err.Error(), "newer BobNet") {
		t.Fatalf("err = %v", err)
	}
}

func TestSchemaConstraints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	mustFail := func(name, sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO boards (id, name, key) VALUES ('b1', 'One', 'ONE'), ('b2', 'Two', 'TWO')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO cards (id, board_id, position, number, title, body, status) VALUES
		('c1', 'b1', 0, 1, 'T', 'B', 'Ready'), ('c2', 'b1', 1, 2, 'T', 'B', 'Backlog'), ('c3', 'b2', 0, 1, 'T', 'B', 'Backlog')`); err != nil {
		t.Fatal(err)
	}
	mustFail("duplicate card number", `INSERT INTO cards (id, board_id, position, number, title, body, status) VALUES ('c9', 'b1', 2, 2, 'T', 'B', 'Ready')`)
	mustFail("no card number", `INSERT INTO cards (id, board_id, position, title, body, status) VALUES ('c9', 'b1', 2, 'T', 'B', 'Ready')`)
	mustFail("bad board key", `INSERT INTO boards (id, name, key) VALUES ('b9', 'Nine', 'no-key')`)
	mustFail("duplicate board key", `INSERT INTO boards (id, name, key) VALUES ('b9', 'Nine', 'ONE')`)
	mustFail("bad status", `INSERT INTO cards (id, board_id, position, number, title, body, status) VALUES ('c9', 'b1', 2, 3, 'T', 'B', 'Delete')`)
	mustFail("bad workspace", `INSERT INTO cards (id, board_id, position, number, title, body, status, workspace_mode) VALUES ('c9', 'b1', 2, 3, 'T', 'B', 'Ready', 'Prod')`)
	mustFail("blank title", `INSERT INTO cards (id, board_id, position, number, title, body, status) VALUES ('c9', 'b1', 2, 3, ' ', 'B', 'Ready')`)
	mustFail("card on missing board", `INSERT INTO cards (id, board_id, position, number, title, body, status) VALUES ('c9', 'bx', 2, 3, 'T', 'B', 'Ready')`)
	mustFail("self link", `INSERT INTO card_links (board_id, card_id, depends_on) VALUES ('b1', 'c1', 'c1')`)
	mustFail("link across boards", `INSERT INTO card_links (board_id, card_id, depends_on) VALUES ('b1', 'c1', 'c3')`)
	mustFail("bad proposal state", `INSERT INTO proposals (id, state) VALUES ('p1', 'deleted')`)
	mustFail("approved without result", `INSERT INTO proposals (id, state) VALUES ('p1', 'approved')`)
	if _, err := pool.Exec(ctx, `INSERT INTO card_links (board_id, card_id, depends_on) VALUES ('b1', 'c2', 'c1')`); err != nil {
		t.Fatal(err)
	}
	mustFail("duplicate link", `INSERT INTO card_links (board_id, card_id, depends_on) VALUES ('b1', 'c2', 'c1')`)
	if _, err := pool.Exec(ctx, `INSERT INTO proposals (id, state) VALUES ('p1', 'pending')`); err != nil {
		t.Fatal(err)
	}
	mustFail("duplicate proposal", `INSERT INTO proposals (id, state) VALUES ('p1', 'pending')`)
}

// TestCardHandlesMigrationKeepsExistingBoards upgrades a database holding
// boards made before card handles: every card gets a number in its board's
// order (cards added later included) and every board a key.
func TestCardHandlesMigrationKeepsExistingBoards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
		all[0].SQL,
		`INSERT INTO schema_migrations (version, name) VALUES (1, '` + all[0].Name + `')`,
		`INSERT INTO boards (id, name) VALUES ('b1', 'Daily Research Newspaper'), ('b2', '!!!')`,
		// A batch added later restarted its positions at 0.
		`INSERT INTO cards (id, board_id, position, title, body, status, created_at) VALUES
		   ('c1', 'b1', 0, 'T', 'B', 'Ready', now() - interval '2 hours'), ('c2', 'b1', 1, 'T', 'B', 'Backlog', now() - interval '2 hours'),
		   ('c3', 'b1', 0, 'T', 'B', 'Backlog', now() - interval '1 hour'), ('c4', 'b2', 0, 'T', 'B', 'Backlog', now())`,
	} {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := migrations.Apply(ctx, pool, storetest.Logger(t)); err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT b.key || '-' || c.number FROM cards c JOIN boards b ON b.id = c.board_id ORDER BY c.id`)
	if err != nil {
		t.Fatal(err)
	}
	var handles []string
	for rows.Next() {
		var h string
		_ = rows.Scan(&h)
		handles = append(handles, h)
	}
	if strings.Join(handles, ",") != "DAIL-1,DAIL-2,DAIL-3,CARD-1" {
		t.Fatalf("handles after the upgrade = %v", handles)
	}
}

// TestBoardKeysMigrationNumbersSharedKeys: boards made before 0010 that
// share a key keep working; the oldest keeps the key, the others take the
// first free numbered one, past a numbered key already in use.
func TestBoardKeysMigrationNumbersSharedKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := upgradeFrom(t, "_unique_board_keys.sql", `INSERT INTO boards (id, name, key, created_at) VALUES
	  ('b1', 'News one', 'NEWS', now() - interval '3 hours'), ('b2', 'News two', 'NEWS', now() - interval '2 hours'),
	  ('b3', 'News three', 'NEWS', now() - interval '1 hour'), ('b4', 'Old second', 'NEWS2', now() - interval '4 hours')`)
	rows, _ := pool.Query(ctx, `SELECT id || '=' || key FROM boards ORDER BY id`)
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, ",") != "b1=NEWS,b2=NEWS3,b3=NEWS4,b4=NEWS2" {
		t.Fatalf("keys after the upgrade = %v", keys)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO boards (id, name, key) VALUES ('b5', 'x', 'NEWS')`); err == nil {
		t.Fatal("a second board with the key NEWS was written")
	}
	var next string
	if err := pool.QueryRow(ctx, `SELECT bobnet_board_key('console', 'NEWS')`).Scan(&next); err != nil || next != "NEWS5" {
		t.Fatalf("next key %q, %v", next, err)
	}
}

// TestScheduleRuleMigration: 0021 lets the database hold every schedule
// the rule accepts (descriptors too, which the old length check refused),
// keeps stored ones with their spacing made single, and removes, audited,
// stored ones that can never fire (@every).
func TestScheduleRuleMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := upgradeFrom(t, "_schedule_rule.sql", `INSERT INTO boards (id, name, key, channel) VALUES ('b1', 'One', 'ONE', 'console:one'), ('b2', 'Two', 'TWO', 'console:two'), ('b3', 'Three', 'THREE', 'console:three')`,
		`INSERT INTO schedules (board_id, cron, timezone, last_slot) VALUES ('b1', '0 6 * * *', 'UTC', now()), ('b2', ' 0  7 * * 1-5 ', 'UTC', now()), ('b3', '@every 1s', 'UTC', now())`)
	rows, _ := pool.Query(ctx, `SELECT board_id || '=' || cron FROM schedules ORDER BY board_id`)
	kept, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(kept, ",") != "b1=0 6 * * *,b2=0 7 * * 1-5" {
		t.Fatalf("schedules after the upgrade = %q", kept)
	}
	var removed string
	if err := pool.QueryRow(ctx, `SELECT board_id || ' ' || channel || ' ' || (detail->>'cron') FROM audit_events WHERE action = 'schedule_removed'`).Scan(&removed); err != nil || removed != "b3 console:three @every 1s" {
		t.Fatalf("removal audited as %q, %v", removed, err)
	}

	// Whatever the rule accepts, the database holds.
	set := func(cron string) error {
		_, err := pool.Exec(ctx, `INSERT INTO schedules (board_id, cron, timezone, last_slot) VALUES ('b3', $1, 'UTC', now())
			ON CONFLICT (board_id) DO UPDATE SET cron = EXCLUDED.cron`, cron)
		return err
	}
	for _, expr := range []string{"@hourly", "@daily", "@weekly", "@monthly", "@yearly", "0 6 * * *", "0 6 * * 1-5", "15 */2 * * *",
		"0 6 ? * MON-FRI", "0 6 1 JAN,jul *", "5 0-23/3 1-31/2 1-12 0-6", "0 6 30 2 *"} {
		c, err := plan.ParseSchedule(expr, "UTC")
		if err != nil && expr != "0 6 30 2 *" {
			t.Fatalf("the rule refuses %q: %v", expr, err)
		}
		if err == nil {
			expr = c.Expr
		}
		if err := set(expr); err != nil {
			t.Errorf("the database refuses %q: %v", expr, err)
		}
	}
	for _, expr := range []string{"@every 1s", "@midnight", "", "0 6 * *", "0 6 * * * *", "0  6 * * *", " 0 6 * * *", "0 6 * * *; DROP", strings.Repeat("1,", 50) + "1 * * * *"} {
		if err := set(expr); err == nil {
			t.Errorf("the database holds %q", expr)
		}
	}
}

// TestTokenChannelsMigrationKeepsTokensUnlimited: tokens made before
// 0020 reach every channel after it (no patterns), and the table refuses
// an empty pattern.
func TestTokenChannelsMigrationKeepsTokensUnlimited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := upgradeFrom(t, "_token_channels.sql", `INSERT INTO api_tokens (name, hash, scopes) VALUES ('ci', '\x01', '{read}')`)
	var channels []string
	if err := pool.QueryRow(ctx, `SELECT channels FROM api_tokens WHERE name = 'ci'`).Scan(&channels); err != nil || channels == nil || len(channels) != 0 {
		t.Fatalf("channels of a token made before 0020 = %#v, %v", channels, err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO api_tokens (name, hash, scopes, channels) VALUES ('x', '\x02', '{read}', '{console:*,""}')`); err == nil {
		t.Fatal("an empty channel pattern was stored")
	}
}

// TestAssigneeIdsMigration: assignees written as chat mentions become
// person ids of their board's workspace or room (what board.Person
// reads), and every other assignee, a role, stays as it was.
func TestAssigneeIdsMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var seed []string
	channels := map[string]string{"b1": "slack:T_A/C1", "b2": "slack:C2", "b3": "matrix:!room:example.org", "b4": "console:main", "b5": "slack:E_ORG/C3"}
	want := []struct{ board, before, after string }{
		{"b1", "<@U123>", "slack:T_A/U123"},
		{"b1", "<@W9|alice>", "slack:T_A/W9"},
		{"b1", "Researcher", "Researcher"},
		{"b1", "@alice:example.org", "@alice:example.org"},
		{"b1", "<@U1> and <@U2>", "<@U1> and <@U2>"},
		{"b1", "<!subteam^S1|@team>", "<!subteam^S1|@team>"},
		{"b1", "", ""},
		{"b2", "<@U5|bob>", "slack:U5"},
		{"b3", "@alice:example.org", "matrix:@alice:example.org"},
		{"b3", "@bob:[::1]:8448", "matrix:@bob:[::1]:8448"},
		{"b3", "<@U7>", "<@U7>"},
		{"b3", "@bob", "@bob"},
		{"b3", "@bad name:example.org", "@bad name:example.org"},
		{"b3", "Coder", "Coder"},
		{"b4", "<@U8>", "<@U8>"},
		{"b4", "@carol:example.org", "@carol:example.org"},
		{"b5", "<@W1|dan>", "slack:E_ORG/W1"},
	}
	for id, ch := range channels {
		seed = append(seed, fmt.Sprintf(`INSERT INTO boards (id, name, key, channel) VALUES ('%s', 'Board', 'B%s', '%s')`, id, strings.ToUpper(id), ch))
	}
	for i, w := range want {
		seed = append(seed, fmt.Sprintf(`INSERT INTO cards (id, board_id, position, number, title, body, status, assignee) VALUES ('c%d', '%s', %d, %d, 'T', 'B', 'Ready', '%s')`,
			i, w.board, i, i+1, strings.ReplaceAll(w.before, "'", "''")))
	}
	pool := upgradeFrom(t, "_assignee_ids.sql", seed...)
	for i, w := range want {
		var got string
		if err := pool.QueryRow(ctx, `SELECT assignee FROM cards WHERE id = $1`, fmt.Sprintf("c%d", i)).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != w.after {
			t.Errorf("%s on %s became %q, want %q", w.before, channels[w.board], got, w.after)
		}
		p, ok := board.ParsePerson(got)
		if changed := got != w.before; changed != ok || ok && !p.AssignableIn(board.TenantOf(channels[w.board])) {
			t.Errorf("%q on %s: a person id %v (%+v), assignable there %v", got, channels[w.board], ok, p, ok && p.AssignableIn(board.TenantOf(channels[w.board])))
		}
	}
}

// TestEncryptionKeysMigration: encryption_keys holds key ids (8 hex
// digits, never a key), once each, stamped when first recorded.
func TestEncryptionKeysMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	if _, err := pool.Exec(ctx, `INSERT INTO encryption_keys (key_id) VALUES ('0a1b2c3d')`); err != nil {
		t.Fatal(err)
	}
	for name, sql := range map[string]string{
		"a duplicate id":       `INSERT INTO encryption_keys (key_id) VALUES ('0a1b2c3d')`,
		"a key, not an id":     `INSERT INTO encryption_keys (key_id) VALUES ('q83vEjRWeJASNFZ4kBI0VniQEjRWeJASNFZ4kBI0Vng=')`,
		"an upper-case id":     `INSERT INTO encryption_keys (key_id) VALUES ('0A1B2C3D')`,
		"no time it was first": `INSERT INTO encryption_keys (key_id, current_since) VALUES ('11111111', NULL)`,
	} {
		if _, err := pool.Exec(ctx, sql); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	var since time.Time
	if err := pool.QueryRow(ctx, `SELECT current_since FROM encryption_keys WHERE key_id = '0a1b2c3d'`).Scan(&since); err != nil || time.Since(since) > time.Minute {
		t.Fatalf("current_since = %v, %v", since, err)
	}
}

// upgradeFrom is a database upgraded to BobNet's newest schema from the
// one before the migration whose name ends in suffix, with seed run on
// that older schema first: the rows a migration must carry over.
func upgradeFrom(t *testing.T, suffix string, seed ...string) *pgxpool.Pool {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	all, err := migrations.All()
	if err != nil {
		t.Fatal(err)
	}
	stmts := []string{`CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`}
	found := false
	for _, m := range all {
		if found = strings.HasSuffix(m.Name, suffix); found {
			break
		}
		stmts = append(stmts, m.SQL, fmt.Sprintf(`INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')`, m.Version, m.Name))
	}
	if !found {
		t.Fatalf("no migration named …%s", suffix)
	}
	for _, sql := range append(stmts, seed...) {
		if _, err := pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := migrations.Apply(ctx, pool, storetest.Logger(t)); err != nil {
		t.Fatal(err)
	}
	return pool
}
