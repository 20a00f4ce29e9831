package bot_test

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/bobnet/bobnet/board"
	"github.com/bobnet/bobnet/bot"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the verbs table of docs/commands.md")

var dialects = map[string]bot.Dialect{"slack": bot.SlackDialect, "matrix": bot.MatrixDialect, "console": bot.ConsoleDialect}

// TestGrammarNewVerb: a verb added to a copy of the table, with its
// handler, is listed in every surface's help and answered on each, with
// nothing else to change; a Matrix-only one only in Matrix.
func TestGrammarNewVerb(t *testing.T) {
	g := append(bot.Grammar{}, bot.Verbs...)
	pong := func(_ context.Context, _ bot.Surface, c bot.Command) bot.CommandAnswer {
		return bot.CommandAnswer{Text: "pong " + strings.Join(c.Args, " ")}
	}
	g = append(g, bot.Verb{Name: "ping", Args: "<what>", Help: "answers pong", Do: pong},
		bot.Verb{Name: "wave", Help: "waves", MatrixOnly: true, Do: pong})
	for name, d := range dialects {
		help := g.Help(d)
		if !strings.Contains(help, d.Prefix+"ping <what>") || !strings.Contains(help, "answers pong.") {
			t.Errorf("%s help does not list ping:\n%s", name, help)
		}
		if got := g.Answer(context.Background(), nil, bot.Command{Dialect: d, Verb: "PING", Args: []string{"x"}}); got.Text != "pong x" {
			t.Errorf("%s answers ping with %+v", name, got)
		}
		wave := g.Answer(context.Background(), nil, bot.Command{Dialect: d, Verb: "wave"})
		if listed := strings.Contains(help, d.Prefix+"wave"); listed != d.MatrixVerbs || wave.Help == d.MatrixVerbs {
			t.Errorf("%s: Matrix-only wave listed %v, answered with help %v", name, listed, wave.Help)
		}
	}
	if strings.Contains(bot.Verbs.Help(bot.SlackDialect), "ping") {
		t.Fatal("the copy changed the table")
	}
}

// TestGrammarTable: every verb said as a command has a handler, and a
// word that is no verb (or help) is answered with help.
func TestGrammarTable(t *testing.T) {
	for _, v := range bot.Verbs {
		if (v.Do == nil) != v.Thread {
			t.Errorf("verb %q: has a handler %v, is a thread verb %v", v.Name, v.Do != nil, v.Thread)
		}
	}
	for _, word := range []string{"", "help", "approve", "frobnicate"} {
		if got := bot.Verbs.Answer(context.Background(), nil, bot.Command{Dialect: bot.SlackDialect, Verb: word}); !got.Help {
			t.Errorf("%q answers %+v, want help", word, got)
		}
	}
}

// TestGrammarUsage: the argument checks answer how to write the command
// in each surface's dialect, before asking the engine anything (the
// surface is nil).
func TestGrammarUsage(t *testing.T) {
	statuses := strings.Join(board.Statuses, ", ")
	tests := []struct {
		dialect, verb string
		args          []string
		want          string
	}{
		{"slack", "move", []string{"NEWS-3"}, "Say which card and where to: `/bobnet move NEWS-3 in progress`. Statuses: " + statuses + "."},
		{"matrix", "move", nil, "Say which card and where to: !bobnet move NEWS-3 in progress. Statuses: " + statuses + "."},
		{"slack", "assign", []string{"NEWS-3"}, "Say which card and to whom: `/bobnet assign NEWS-3 @alice`, a profile (`/bobnet assign NEWS-3 Researcher`) or `none`."},
		{"matrix", "assign", nil, "Say which card and to whom: !bobnet assign NEWS-3 @alice:example.org, a profile (!bobnet assign NEWS-3 Researcher) or none."},
		{"console", "assign", nil, "Say which card and to whom: a profile (/bobnet assign NEWS-3 Researcher) or none."},
		{"slack", "sendback", []string{"NEWS-3"}, "Say which card, and when sending back, why: `/bobnet accept NEWS-3`, `/bobnet sendback NEWS-3 cite the sources`."},
		{"matrix", "accept", nil, "Say which card, and when sending back, why: !bobnet accept NEWS-3, !bobnet sendback NEWS-3 cite the sources."},
		{"slack", "plan", nil, "Say what to plan: `/bobnet plan our product launch`."},
		{"slack", "status", []string{"b_1"}, "That is not a board id; board ids look like b_ followed by 26 letters and digits."},
	}
	for _, tc := range tests {
		got := bot.Verbs.Answer(context.Background(), nil, bot.Command{Dialect: dialects[tc.dialect], Verb: tc.verb, Args: tc.args})
		if got.Text != tc.want || got.Act != "" {
			t.Errorf("%s %s %q:\n got %+v\nwant %q", tc.dialect, tc.verb, tc.args, got, tc.want)
		}
	}
	if got := bot.Verbs.Answer(context.Background(), nil, bot.Command{Dialect: bot.MatrixDialect, Verb: "plan", Text: "our launch"}); got.Act != bot.ActPlan || got.Text != "our launch" {
		t.Errorf("plan answers %+v", got)
	}
}

func TestParseCommand(t *testing.T) {
	verb, args, rest := bot.ParseCommand("  Plan  our   launch ")
	if verb != "plan" || strings.Join(args, "|") != "our|launch" || rest != "our   launch" {
		t.Fatalf("%q %q %q", verb, args, rest)
	}
	if verb, args, rest = bot.ParseCommand(" "); verb != "" || args != nil || rest != "" {
		t.Fatalf("blank: %q %q %q", verb, args, rest)
	}
}

// TestCommandsDoc: the table of docs/commands.md is the table of verbs
// (go test ./bot -run TestCommandsDoc -update-docs rewrites it).
func TestCommandsDoc(t *testing.T) {
	const path, begin, end = "../docs/commands.md", "<!-- verbs:begin -->\n", "<!-- verbs:end -->"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", path, begin, end)
	}
	want := bot.Verbs.Markdown()
	if got := doc[i+len(begin) : j]; got != want {
		if *updateDocs {
			if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the verbs of %s are not bot.Verbs; run go test ./bot -run TestCommandsDoc -update-docs. Want:\n%s", path, want)
	}
}
