package app

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestConfigurationDocIsCurrent fails when docs/configuration.md no longer
// matches the settings; regenerate it with
// go run ./cmd/bobnet config doc > docs/configuration.md.
func TestConfigurationDocIsCurrent(t *testing.T) {
	t.Parallel()
	got, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != ConfigDoc() {
		t.Fatal("docs/configuration.md is out of date: go run ./cmd/bobnet config doc > docs/configuration.md")
	}
	for _, s := range settings {
		if !strings.Contains(string(got), "\n## "+s.env+"\n") {
			t.Errorf("no section for %s", s.env)
		}
	}
	for env := range whenWrong {
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.env == env }) {
			t.Errorf("whenWrong describes %s, which is not a setting", env)
		}
	}
}
