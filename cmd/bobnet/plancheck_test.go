package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type checkOutput struct {
	Valid    bool                                `json:"valid"`
	Kind     string                              `json:"kind"`
	Errors   []struct{ Path, Message string }    `json:"errors"`
	Warnings []struct{ Path, Message string }    `json:"warnings"`
	Plan     json.RawMessage                     `json:"plan"`
	Stats    struct{ Cards, Links, Actions int } `json:"stats"`
}

func planCheck(t *testing.T, stdin string, args ...string) (int, checkOutput, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"plan", "check"}, args...), strings.NewReader(stdin), &out, &errb)
	var got checkOutput
	if code != 2 {
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("stdout is not one JSON object: %v\n%s", err, out.String())
		}
	}
	return code, got, errb.String()
}

func TestPlanCheckNewspaper(t *testing.T) {
	t.Parallel()
	code, got, _ := planCheck(t, "", "../../testdata/plans/newspaper.json")
	if code != 0 || !got.Valid || got.Kind != "propose_actions" || got.Stats.Cards != 10 || got.Stats.Links != 13 || got.Stats.Actions != 1 {
		t.Fatalf("code %d, output %+v", code, got)
	}
	if got.Errors == nil || got.Warnings == nil || len(got.Plan) == 0 {
		t.Errorf("errors/warnings must be lists and plan present: %+v", got)
	}
}

func TestPlanCheckEveryBrokenFile(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("../../testdata/plans/invalid-*")
	if len(files) < 20 {
		t.Fatalf("only %d broken files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			// The files are model outputs for a channel with no board.
			code, got, _ := planCheck(t, "", "--no-board", f)
			if code != 1 || got.Valid || len(got.Errors) == 0 || got.Errors[0].Message == "" {
				t.Fatalf("code %d, output %+v", code, got)
			}
		})
	}
}

func TestPlanCheckStdinAndProfiles(t *testing.T) {
	t.Parallel()
	plan, err := os.ReadFile("../../testdata/plans/newspaper.json")
	if err != nil {
		t.Fatal(err)
	}
	code, got, _ := planCheck(t, string(plan), "--profiles", "Coder,Writer", "-")
	if code != 0 || len(got.Warnings) != 8 { // every Planner, Researcher and Reviewer card
		t.Fatalf("code %d, warnings %+v", code, got.Warnings)
	}
	card := `{"kind":"propose_actions","actions":[{"type":"create_card","cards":[{"temp_id":"a","title":"T","body":"B","assignee":"Coder","status":"Ready"}]}]}`
	if code, got, _ := planCheck(t, card, "--board"); code != 0 || len(got.Warnings) != 0 {
		t.Errorf("card action with --board: code %d, warnings %+v", code, got.Warnings)
	}
	if code, got, _ := planCheck(t, card, "--no-board"); code != 1 || len(got.Errors) != 1 || got.Errors[0].Path != "actions[0].type" {
		t.Errorf("card action with --no-board: code %d, errors %+v", code, got.Errors)
	}
}

func TestPlanCheckWithoutBoardFlagWarnsAboutCardActions(t *testing.T) {
	t.Parallel()
	card := `{"kind":"propose_actions","actions":[{"type":"create_card","cards":[{"temp_id":"a","title":"T","body":"B","assignee":"Coder","status":"Ready"}]}]}`
	code, got, _ := planCheck(t, card)
	if code != 0 || !got.Valid || len(got.Errors) != 0 || len(got.Warnings) != 1 {
		t.Fatalf("code %d, output %+v", code, got)
	}
	if w := got.Warnings[0]; w.Path != "actions[0].type" || !strings.Contains(w.Message, "target board") || !strings.Contains(w.Message, "--board or --no-board") {
		t.Errorf("warning = %+v", w)
	}
	// A plan broken in another way stays invalid.
	broken := strings.Replace(card, `"status":"Ready"`, `"status":"Done"`, 1)
	if code, got, _ := planCheck(t, broken); code != 1 || len(got.Errors) != 1 || len(got.Warnings) != 1 {
		t.Errorf("broken card: code %d, output %+v", code, got)
	}
	if code, _, stderr := planCheck(t, card, "--board", "--no-board"); code != 2 || !strings.Contains(stderr, "not both") {
		t.Errorf("both flags: code %d, %s", code, stderr)
	}
}

func TestPlanCheckSaysItReadsStdinAtATerminal(t *testing.T) {
	t.Parallel()
	// /dev/null is a character device, as a terminal is.
	tty, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var out, errb bytes.Buffer
	run([]string{"plan", "check"}, tty, &out, &errb)
	if !strings.Contains(errb.String(), "reading the model output from standard input") {
		t.Errorf("stderr = %q", errb.String())
	}
	errb.Reset()
	run([]string{"plan", "check"}, strings.NewReader("{}"), &out, &errb)
	if strings.Contains(errb.String(), "standard input") {
		t.Errorf("a pipe got the terminal hint: %q", errb.String())
	}
}

func TestPlanCheckUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--nope"}, {"a", "b"}, {"../../testdata/plans/does-not-exist.json"}} {
		if code, _, stderr := planCheck(t, "", args...); code != 2 || stderr == "" {
			t.Errorf("%v: code %d, stderr %q", args, code, stderr)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"plan"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("bobnet plan: code %d", code)
	}
}

// TestPlanCheckPrintsTextAsWritten: the output is read on a terminal, so
// a cycle's arrows are "->", not HTML-escaped "\u003e".
func TestPlanCheckPrintsTextAsWritten(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := run([]string{"plan", "check", "--no-board", "../../testdata/plans/invalid-cycle.json"}, strings.NewReader(""), &out, &errb); code != 1 {
		t.Fatalf("code %d: %s", code, errb.String())
	}
	if strings.Contains(out.String(), `\u003e`) || !strings.Contains(out.String(), "->") {
		t.Fatalf("cycle message escaped for HTML:\n%s", out.String())
	}
}
