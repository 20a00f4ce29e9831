package systemtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The package tables of docs/architecture.md and README.md are the map a
// newcomer reads first; TestPackageTablesMatchTheTree keeps them true to
// the tree. Every package of the module is named in both (a cell may name
// several, `store/`, `migrations/`), and every name there is a folder of Go
// code. Test helpers (packages named …test inside another package's
// folder, such as store/storetest) go with the package they serve and
// need no row; systemtest, a folder of its own, has one.

// packageTable returns the backticked names in the first column of the
// markdown table headed "| path | owns |" in the file at path.
func packageTable(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	start := slices.Index(lines, "| path | owns |")
	if start < 0 {
		t.Fatalf("%s has no package table (| path | owns |)", path)
	}
	name := regexp.MustCompile("`([a-z0-9/]+)`")
	var out []string
	for _, line := range lines[start+2:] {
		if !strings.HasPrefix(line, "|") {
			break
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "|"), "|")
		for _, m := range name.FindAllStringSubmatch(first, -1) {
			out = append(out, strings.TrimSuffix(m[1], "/"))
		}
	}
	return out
}

func TestPackageTablesMatchTheTree(t *testing.T) {
	t.Parallel()
	root := ".."
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	var pkgs []string
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, modulePath), "/")
		if rel == "" || strings.Contains(rel, "/") && strings.HasSuffix(filepath.Base(rel), "test") {
			continue
		}
		pkgs = append(pkgs, rel)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %v", pkgs)
	}
	for _, doc := range []string{"docs/architecture.md", "README.md"} {
		table := packageTable(t, filepath.Join(root, doc))
		for _, p := range pkgs {
			if !slices.Contains(table, p) {
				t.Errorf("%s: the package table does not name %s", doc, p)
			}
		}
		for _, name := range table {
			if !slices.Contains(pkgs, name) {
				if _, err := os.Stat(filepath.Join(root, name)); err != nil {
					t.Errorf("%s: the package table names %s, which is not in the tree", doc, name)
				}
			}
		}
	}
}
