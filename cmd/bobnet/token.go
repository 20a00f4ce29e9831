package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bobnet/bobnet/apitoken"
	"github.com/bobnet/bobnet/migrations"
	"github.com/bobnet/bobnet/store"
)

const tokenUsage = `usage:
  bobnet token create NAME --scopes read,propose[,approve,write,admin] [--user U] [--channels 'slack:T0ONE/*,console:*']
  bobnet token list
  bobnet token revoke NAME
`

// runToken manages API tokens: create prints the new token once, list
// shows names, scopes, users and channels (never secrets), revoke ends
// one at once.
func runToken(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	verb, rest := args[0], args[1:]
	fs := flag.NewFlagSet("bobnet token "+verb, flag.ContinueOnError)
	fs.SetOutput(stderr)
	scopes := fs.String("scopes", "", "comma-separated scopes: read, propose, approve, write, admin")
	user := fs.String("user", "", "bind the token to this user: bodies may not act for anyone else")
	channels := fs.String("channels", "", "limit the token to these channels: comma-separated channel keys (slack:C0123) or prefixes ending in * (slack:T0ONE/*, console:*); none means every channel")
	dbURL := fs.String("database-url", getenv("DATABASE_URL"), "Postgres connection URL ($DATABASE_URL)")
	// Flags may come before or after the name.
	var names []string
	for len(rest) > 0 {
		if err := fs.Parse(rest); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return 0
			}
			return 2
		}
		rest = fs.Args()
		if len(rest) > 0 {
			names, rest = append(names, rest[0]), rest[1:]
		}
	}
	wantNames := map[string]int{"create": 1, "revoke": 1, "list": 0}
	n, ok := wantNames[verb]
	if !ok || len(names) != n {
		fmt.Fprint(stderr, tokenUsage)
		return 2
	}
	if *dbURL == "" {
		runDir := cmp.Or(getenv("BOBNET_RUN_DIR"), ".run")
		*dbURL = makeRunDatabase(runDir)
		if *dbURL == "" {
			fmt.Fprintf(stderr, "bobnet token: DATABASE_URL: required: set it, or run this in the checkout where `make run` is running (it reads %s)\n", filepath.Join(runDir, "env"))
			return 2
		}
		fmt.Fprintf(stderr, "bobnet token: using the database of `make run` (%s)\n", filepath.Join(runDir, "env"))
	}
	var parsed []apitoken.Scope
	var patterns []string
	if verb == "create" {
		var err error
		if parsed, err = apitoken.ParseScopes(*scopes); err != nil {
			fmt.Fprintf(stderr, "bobnet token create: --scopes: %v\n", err)
			return 2
		}
		if patterns, err = apitoken.ParseChannels(*channels); err != nil {
			fmt.Fprintf(stderr, "bobnet token create: --channels: %v\n", err)
			return 2
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	db, err := store.Open(ctx, *dbURL, logger)
	if err != nil {
		fmt.Fprintf(stderr, "bobnet token: DATABASE_URL: %v\n", err)
		return 1
	}
	defer db.Close()
	if _, err := migrations.Apply(ctx, db.Pool(), logger); err != nil {
		fmt.Fprintf(stderr, "bobnet token: %v\n", err)
		return 1
	}
	tokens := apitoken.NewTokens(db)
	switch verb {
	case "create":
		secret, err := tokens.CreateLimited(ctx, names[0], parsed, *user, patterns)
		if err != nil {
			fmt.Fprintf(stderr, "bobnet token create: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, secret)
		reach := "every channel"
		if len(patterns) > 0 {
			reach = "only " + strings.Join(patterns, ",")
		}
		fmt.Fprintf(stderr, "token %q created with scopes %s, reaching %s; it is shown only now: store it somewhere safe\n", names[0], *scopes, reach)
	case "revoke":
		if err := tokens.Revoke(ctx, names[0]); err != nil {
			fmt.Fprintf(stderr, "bobnet token revoke: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "token %q revoked\n", names[0])
	case "list":
		list, err := tokens.List(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "bobnet token list: %v\n", err)
			return 1
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tSCOPES\tUSER\tCHANNELS\tCREATED\tREVOKED")
		for _, t := range list {
			sc := make([]string, len(t.Scopes))
			for i, s := range t.Scopes {
				sc[i] = string(s)
			}
			revoked := "-"
			if !t.RevokedAt.IsZero() {
				revoked = t.RevokedAt.UTC().Format(time.RFC3339)
			}
			channels := "*"
			if t.Limited() {
				channels = strings.Join(t.Channels, ",")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.Name, strings.Join(sc, ","), dash(t.User), channels, t.CreatedAt.UTC().Format(time.RFC3339), revoked)
		}
		_ = tw.Flush()
	}
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// makeRunDatabase is the DATABASE_URL that a running `make run` wrote into
// its folder, or "" when none runs there.
func makeRunDatabase(runDir string) string {
	b, err := os.ReadFile(filepath.Join(runDir, "env"))
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "DATABASE_URL="); ok {
			return v
		}
	}
	return ""
}
