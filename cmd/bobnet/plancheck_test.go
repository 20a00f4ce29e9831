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
			code, got, _ := planCheck(t, "", f)
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
	if code, _, _ := planCheck(t, card); code != 1 {
		t.Errorf("card action without --board: code %d", code)
	}
	if code, _, _ := planCheck(t, card, "--board"); code != 0 {
		t.Errorf("card action with --board: code %d", code)
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
