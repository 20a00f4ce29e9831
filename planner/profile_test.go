package planner

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDefaultProfiles(t *testing.T) {
	t.Parallel()
	ps := DefaultProfiles()
	if got := ProfileNames(ps); !slices.Equal(got, defaultNames) {
		t.Fatalf("names = %v", got)
	}
	runners := map[string]string{}
	for _, p := range ps {
		if p.Description == "" || len(p.Skills) == 0 || p.Body == "" {
			t.Errorf("profile %s incomplete: %+v", p.Name, p)
		}
		runners[p.Name] = p.Runner
	}
	// Research, planning and review the model can do; code needs tools.
	if runners["Researcher"] != "model" || runners["Planner"] != "model" || runners["Reviewer"] != "model" || runners["Coder"] != "" {
		t.Errorf("runners = %v", runners)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadProfiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "writer", "AGENT.md"), "---\nname: Writer\ndescription: Writes copy.\nskills: [prose]\nmodel: llama3.1\nrunner: hook:cms\nreview: none\n---\nWrites.\n")
	writeFile(t, filepath.Join(dir, "team", "designer", "AGENT.md"), "\ufeff---\r\ndescription: Draws.\r\n---\r\n")
	writeFile(t, filepath.Join(dir, "notes.md"), "ignored")
	ps, err := LoadProfiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := ProfileNames(ps); !slices.Equal(got, []string{"Writer", "team/designer"}) {
		t.Fatalf("names = %v", got)
	}
	if ps[0].Model != "llama3.1" || ps[0].Runner != "hook:cms" || ps[0].Review != "none" || ps[0].Body != "Writes." || ps[1].Description != "Draws." {
		t.Errorf("profiles = %+v", ps)
	}
}

func TestLoadProfilesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no front matter", map[string]string{"a/AGENT.md": "# Just markdown\n"}, "a/AGENT.md: no YAML front matter"},
		{"bad yaml", map[string]string{"a/AGENT.md": "---\nname: [unclosed\n---\n"}, "a/AGENT.md: front matter"},
		{"duplicate", map[string]string{"a/AGENT.md": "---\nname: Coder\n---\n", "b/AGENT.md": "---\nname: coder\n---\n"}, "already defined"},
		{"comma in name", map[string]string{"a/AGENT.md": "---\nname: A, B\n---\n"}, "without commas"},
		{"unknown runner", map[string]string{"a/AGENT.md": "---\nname: A\nrunner: shell\n---\n"}, "runner \"shell\" must be model, hook:<name>"},
		{"hook without a name", map[string]string{"a/AGENT.md": "---\nname: A\nrunner: \"hook:\"\n---\n"}, "must be model, hook:<name>"},
		{"unknown review", map[string]string{"a/AGENT.md": "---\nname: A\nreview: later\n---\n"}, "review \"later\" must be none or always"},
		{"empty", map[string]string{"README.md": "x"}, "no AGENT.md files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for p, c := range tt.files {
				writeFile(t, filepath.Join(dir, p), c)
			}
			_, err := LoadProfiles(dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if _, err := LoadProfiles(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing folder loaded")
	}
}

func TestRunnersOfTheFirstProfileOfAName(t *testing.T) {
	rs := RunnersOf([]Profile{
		{Name: "Researcher", Runner: "model", Review: "none"},
		{Name: "researcher", Runner: "hook:other"},
		{Name: "Coder"},
	})
	if r := rs.For("RESEARCHER"); r.Name != "model" || !r.NoReview {
		t.Errorf("Researcher: %+v", r)
	}
	if r := rs.For("Coder"); r.Name != "" || r.NoReview {
		t.Errorf("Coder: %+v", r)
	}
}
