package main

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const modulePath = "github.com/bobnet/bobnet"

type importRule struct {
	dir       string   // module-relative folder, with everything below it
	forbidden []string // module-relative package prefixes
}

// importRules says which of our packages each part of the tree must not
// import, so data flows one way: adapters -> bot -> planner/board. A test
// rather than a convention, because a convention erodes one import at a time.
var importRules = []importRule{
	{"planner", []string{"bot", "board", "migrations", "adapters", "cmd"}},
	{"board", []string{"bot", "adapters", "cmd"}},
	{"migrations", []string{"bot", "board", "planner", "adapters", "cmd"}},
	{"bot", []string{"adapters", "cmd"}},
	{"adapters/slack", []string{"adapters/console", "adapters/matrix", "adapters/webhook", "cmd"}},
	{"adapters/console", []string{"adapters/slack", "adapters/matrix", "adapters/webhook", "cmd"}},
	{"adapters/matrix", []string{"adapters/slack", "adapters/console", "adapters/webhook", "cmd"}},
	{"adapters/webhook", []string{"adapters/slack", "adapters/console", "adapters/matrix", "cmd"}},
	{"apitoken", []string{"adapters", "cmd"}},
}

// importViolations lists every import under root that breaks rules, and
// how many Go files it read.
func importViolations(root string, rules []importRule) (violations []string, files int, err error) {
	for _, rule := range rules {
		dir := filepath.Join(root, filepath.FromSlash(rule.dir))
		if _, err := os.Stat(dir); err != nil {
			continue // not built yet
		}
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			// Tests may reach further (a test database, a fake server);
			// the rules are about what the product code depends on.
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			files++
			rel, _ := filepath.Rel(root, path)
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				own, ok := strings.CutPrefix(p, modulePath+"/")
				if !ok {
					continue
				}
				for _, bad := range rule.forbidden {
					if own == bad || strings.HasPrefix(own, bad+"/") {
						violations = append(violations, rel+" imports "+p+": "+rule.dir+" must not import "+bad)
					}
				}
			}
			return nil
		})
		if err != nil {
			return nil, files, err
		}
	}
	return violations, files, nil
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	violations, files, err := importViolations(root, importRules)
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no Go files checked")
	}
	for _, v := range violations {
		t.Error(v)
	}
}

func TestImportRulesCatchAViolation(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "planner"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := "package planner\n\nimport _ \"" + modulePath + "/bot/pending\"\n"
	if err := os.WriteFile(filepath.Join(root, "planner", "bad.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	violations, files, err := importViolations(root, importRules)
	if err != nil || files != 1 || len(violations) != 1 || !strings.Contains(violations[0], "planner must not import bot") {
		t.Fatalf("violations = %q, files = %d, err = %v", violations, files, err)
	}
}
