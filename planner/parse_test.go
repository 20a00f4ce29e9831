package planner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bobnet/bobnet/plan"
)

func TestParse(t *testing.T) {
	t.Parallel()
	obj := `{"kind":"answer","answer":"use {braces} and \"quotes\" and } freely"}`
	tests := []struct {
		name    string
		in      string
		want    string // the object extracted, when no error
		wantErr error
	}{
		{"pure", obj, obj, nil},
		{"whitespace", "\n\t " + obj + "\n", obj, nil},
		{"fenced", "```json\n" + obj + "\n```", obj, nil},
		{"fence without language", "```\n" + obj + "\n```", obj, nil},
		{"prose around", "Here you go:\n" + obj + "\nHope that helps!", obj, nil},
		{"prose with brackets", "See [1] and [the docs](x). " + obj, obj, nil},
		{"prose with non-JSON braces", "Fill in {name} later.\n" + obj, obj, nil},
		{"bom", "\ufeff" + obj, obj, nil},
		{"think block", "<think>maybe {\"kind\":\"refuse\"}?</think>" + obj, obj, nil},
		{"unclosed think", "<think>still thinking " + obj, "", ErrTruncated},
		{"chatml", "<|im_start|>assistant\n" + obj + "<|im_end|>", obj, nil},
		{"llama3", "<|start_header_id|>assistant<|end_header_id|>\n\n" + obj + "<|eot_id|>", obj, nil},
		{"harmony", "<|channel|>final<|message|>" + obj + "<|return|>", obj, nil},
		{"escaped quote before brace", `{"answer":"a \\\" } b","kind":"answer"}`, `{"answer":"a \\\" } b","kind":"answer"}`, nil},
		{"two objects", obj + "\n" + obj, "", ErrAmbiguous},
		{"two objects in fences", "```json\n" + obj + "\n```\nor\n```json\n" + obj + "\n```", "", ErrAmbiguous},
		{"truncated", obj[:30], "", ErrTruncated},
		{"array", "[" + obj + "]", "", plan.ErrNotObject},
		{"no json", "I cannot help with that.", "", ErrNoJSON},
		{"empty", "", "", ErrNoJSON},
		{"bad json", `{"kind": "answer",}`, "", plan.ErrBadJSON},
		{"too large", strings.Repeat(" ", MaxRawOutput+1), "", ErrTooLarge},
		{"too deep", strings.Repeat("[", 100) + obj, "", ErrTooDeep},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tt.in))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestParseDeepNestingIsFast(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		strings.Repeat("[", 100000),
		strings.Repeat("{", 100000),
		strings.Repeat("{\"a\":", 50000),
		strings.Repeat("[", 100000) + strings.Repeat("]", 100000),
		"<think>" + strings.Repeat("<think>", 20000),
	} {
		done := make(chan error, 1)
		go func() { _, err := Parse([]byte(in)); done <- err }()
		select {
		case err := <-done:
			if err == nil {
				t.Errorf("no error for %q…", in[:20])
			}
			res := Check([]byte(in), plan.Options{})
			if res.Valid || len(res.Errors) == 0 {
				t.Errorf("Check accepted %q…", in[:20])
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Parse hangs on %q…", in[:20])
		}
	}
}
