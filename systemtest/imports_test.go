package systemtest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/bobnet/bobnet"

type importRule struct {
	dir       string   // module-relative folder, with everything below it
	forbidden []string // module-relative package prefixes
	// external are import path prefixes from outside the module (the
	// standard library or a dependency), such as "net/http".
	external []string
}

// importRules says which of our packages each part of the tree must not
// depend on, directly or through another package, so data flows one way:
// adapters -> bot -> planner/board -> plan. plan, the shapes of a plan,
// imports nothing of ours (see leafPackages), so storage depends on it and
// not on the model client. A test rather than a convention, because a
// convention erodes one import at a time. Each adapter under adapters/
// gets a rule of its own (see adapterRules). Storage speaks SQL and
// nothing else: store serves no HTTP and board, the types every layer
// shares, has neither SQL nor HTTP; the board page lives in web. The same
// goes for the Redis store, bot/redisstore. web draws every HTML page from
// what each page's owner hands it through interfaces web declares, so it
// reaches no adapter, no storage and not the engine (the console turns
// the engine's proposals into web.ProposalView, app hands *store.Store to
// the board and run pages).
var importRules = []importRule{
	{"planner", []string{"bot", "board", "store", "web", "migrations", "adapters", "cmd", "metrics", "app"}, nil},
	{"board", []string{"planner", "store", "web", "httpapi", "bot", "adapters", "cmd", "metrics", "app"}, []string{"github.com/jackc/pgx", "net/http"}},
	{"store", []string{"planner", "bot", "adapters", "cmd", "httpapi", "web", "metrics", "app"}, []string{"net/http"}},
	{"migrations", []string{"bot", "board", "store", "planner", "adapters", "cmd", "metrics", "app"}, nil},
	{"bot", []string{"adapters", "cmd", "metrics", "app"}, nil},
	// The Redis store implements the engine's interfaces with the engine's
	// records (in board) and nothing of the engine: no model client.
	{"bot/redisstore", []string{"planner", "store", "web", "httpapi", "adapters", "cmd", "metrics", "app"}, []string{"net/http"}},
	{"web", []string{"adapters", "cmd", "store", "bot", "planner", "run", "httpapi", "migrations", "metrics", "apitoken", "secretbox", "app"}, nil},
	{"metrics", []string{"adapters", "cmd", "app"}, nil},
	// run works runs through the engine's interfaces and storage's rows; it
	// draws no page (web does) and serves no route (httpapi does).
	{"run", []string{"adapters", "cmd", "httpapi", "web", "bot/redisstore", "app"}, nil},
	// The API reaches the engine and storage through interfaces it declares
	// and is mounted by app; it knows no chat platform.
	{"httpapi", []string{"adapters", "cmd", "web", "store", "bot/redisstore", "migrations", "app"}, nil},
	// Event streams and sealing are tools every layer may use: they know
	// nothing of boards.
	{"sse", []string{"adapters", "cmd", "bot", "board", "store", "planner", "run", "httpapi", "web", "apitoken", "metrics", "migrations", "app"}, nil},
	{"secretbox", []string{"adapters", "cmd", "bot", "board", "store", "planner", "run", "httpapi", "web", "apitoken", "metrics", "migrations", "app"}, nil},
	{"soak", []string{"adapters", "bot", "store", "planner", "run", "httpapi", "web", "apitoken", "metrics", "migrations", "app"}, nil},
	// The soak drives the built binary from outside, as do the scripts'
	// tools and the chart's test: none links BobNet's packages.
	{"scripts", []string{"adapters", "bot", "board", "store", "planner", "run", "httpapi", "web", "apitoken", "metrics", "migrations", "app"}, nil},
	{"deploy", []string{"adapters", "bot", "board", "store", "planner", "run", "httpapi", "web", "apitoken", "metrics", "migrations", "app"}, nil},
	{"apitoken", []string{"adapters", "cmd", "metrics", "app"}, nil},
	// app wires every part together and is what cmd starts; no part of
	// BobNet depends on it (each part's rule above names it), and it
	// drives none of the tools that run the built binary from outside.
	{"app", []string{"cmd", "soak", "scripts", "deploy"}, []string{"github.com/prometheus", "google.golang.org/protobuf"}},
	// The binary writes its metrics with github.com/VictoriaMetrics/metrics:
	// client_golang and the protobuf it links cost idle resident memory.
	// Tests may still parse /metrics with github.com/prometheus/common.
	{"cmd", []string{"soak", "scripts", "deploy"}, []string{"github.com/prometheus", "google.golang.org/protobuf"}},
}

// adapterForbidden are what no adapter may depend on besides another
// adapter: they reach storage through interfaces they declare, satisfied
// by *store.Store in app, and proposals through the engine.
var adapterForbidden = []string{"cmd", "app", "store", "bot/redisstore"}

// adapterRules forbids every adapter under root/adapters from depending on
// another adapter or on adapterForbidden, whichever adapters exist.
func adapterRules(root string) ([]importRule, error) {
	entries, err := os.ReadDir(filepath.Join(root, "adapters"))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	var rules []importRule
	for _, n := range names {
		r := importRule{dir: "adapters/" + n, forbidden: slices.Clone(adapterForbidden)}
		for _, other := range names {
			if other != n {
				r.forbidden = append(r.forbidden, "adapters/"+other)
			}
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// leafPackages import nothing of ours: they hold what every layer may use
// (plan's shapes, signing's checks), so one import of ours would tie
// every layer to it. Their rules name every other package, whichever
// exist (leafRules), so a package added later is covered too. systemtest
// is one too: its code is all tests (which reach BobNet through app, as
// cmd does, and from outside), so nothing of it is linked into BobNet,
// and every leaf's rule forbids the others, systemtest included.
var leafPackages = []string{"plan", "signing", "httpjson", "systemtest"}

// leafRules forbids each of leaves from depending on any other top-level
// folder of root that holds Go code, whichever folders exist.
func leafRules(root string, leaves []string) ([]importRule, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var ours []string
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		hasGo := errors.New("has Go files")
		err := filepath.WalkDir(filepath.Join(root, e.Name()), func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".go") {
				return hasGo
			}
			return err
		})
		switch {
		case errors.Is(err, hasGo):
			ours = append(ours, e.Name())
		case err != nil:
			return nil, err
		}
	}
	var rules []importRule
	for _, leaf := range leaves {
		r := importRule{dir: leaf}
		for _, other := range ours {
			if other != leaf {
				r.forbidden = append(r.forbidden, other)
			}
		}
		rules = append(rules, r)
	}
	return rules, nil
}

// importViolations lists every dependency of the packages under root that
// breaks rules, following imports transitively (go list -deps), and how
// many packages it checked. Test files are left out: tests may reach
// further (a test database, a fake server). A rule naming a folder that is
// not there is an error, so a renamed package cannot silently escape.
func importViolations(root string, rules []importRule) (violations []string, packages int, err error) {
	for _, r := range rules {
		for _, dir := range append([]string{r.dir}, r.forbidden...) {
			if st, err := os.Stat(filepath.Join(root, filepath.FromSlash(dir))); err != nil || !st.IsDir() {
				return nil, 0, fmt.Errorf("import rule for %s names %s, which is not a folder of the module", r.dir, dir)
			}
		}
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, 0, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	under := func(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], modulePath+"/")
		if !ok {
			continue
		}
		packages++
		for _, r := range rules {
			if !under(pkg, r.dir) {
				continue
			}
			// An outside package is named once per rule, by the first
			// dependency under it: net/http brings its internals along.
			named := map[string]bool{}
			for _, dep := range fields[1:] {
				own, ok := strings.CutPrefix(dep, modulePath+"/")
				if !ok {
					if i := slices.IndexFunc(r.external, func(bad string) bool { return under(dep, bad) }); i >= 0 && !named[r.external[i]] {
						named[r.external[i]] = true
						violations = append(violations, fmt.Sprintf("%s depends on %s: %s must not depend on %s", pkg, dep, r.dir, r.external[i]))
					}
					continue
				}
				if i := slices.IndexFunc(r.forbidden, func(bad string) bool { return under(own, bad) }); i >= 0 {
					violations = append(violations, fmt.Sprintf("%s depends on %s: %s must not depend on %s", pkg, own, r.dir, r.forbidden[i]))
				}
			}
		}
	}
	return violations, packages, nil
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	return root
}

func TestImportRules(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	adapters, err := adapterRules(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(adapters) < 2 {
		t.Fatalf("only %d adapters found", len(adapters))
	}
	leaves, err := leafRules(root, leafPackages)
	if err != nil {
		t.Fatal(err)
	}
	adapters = append(adapters, leaves...)
	violations, packages, err := importViolations(root, append(slices.Clone(importRules), adapters...))
	if err != nil {
		t.Fatal(err)
	}
	if packages < 10 {
		t.Fatalf("only %d packages checked", packages)
	}
	for _, v := range violations {
		t.Error(v)
	}
}

// TestEveryPackageHasAnImportRule: a package added to the tree is under
// a rule (its own or its parent folder's, an adapter's or a leaf's), so
// no package escapes the direction of imports by being new.
func TestEveryPackageHasAnImportRule(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	adapters, err := adapterRules(root)
	if err != nil {
		t.Fatal(err)
	}
	leaves, err := leafRules(root, leafPackages)
	if err != nil {
		t.Fatal(err)
	}
	rules := append(append(slices.Clone(importRules), adapters...), leaves...)
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(strings.TrimPrefix(p, modulePath), "/")
		covered := slices.ContainsFunc(rules, func(r importRule) bool { return rel == r.dir || strings.HasPrefix(rel, r.dir+"/") })
		if !covered {
			t.Errorf("%s has no import rule: add one to importRules", rel)
		}
	}
}

// writeModule lays out a module of files (path -> source) in a temporary
// folder.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	files["go.mod"] = "module " + modulePath + "\n\ngo 1.26\n"
	for name, src := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestImportRulesCatchATransitiveViolation(t *testing.T) {
	t.Parallel()
	// planner imports a harmless-looking package that imports bot.
	root := writeModule(t, map[string]string{
		"planner/p.go":        "package planner\n\nimport _ \"" + modulePath + "/text\"\n",
		"text/text.go":        "package text\n\nimport _ \"" + modulePath + "/bot/redisstore\"\n",
		"bot/redisstore/p.go": "package redisstore\n",
	})
	rules := []importRule{{"planner", []string{"bot"}, nil}}
	violations, packages, err := importViolations(root, rules)
	if err != nil || packages != 3 || len(violations) != 1 || !strings.Contains(violations[0], "planner depends on bot/redisstore: planner must not depend on bot") {
		t.Fatalf("violations = %q, packages = %d, err = %v", violations, packages, err)
	}
	// Test files may reach further.
	root = writeModule(t, map[string]string{
		"planner/p.go":      "package planner\n",
		"planner/p_test.go": "package planner\n\nimport _ \"" + modulePath + "/bot\"\n",
		"bot/b.go":          "package bot\n",
	})
	if violations, _, err := importViolations(root, rules); err != nil || len(violations) != 0 {
		t.Fatalf("a test file's import counted: %q, %v", violations, err)
	}
}

func TestImportRuleNamingAMissingFolderFails(t *testing.T) {
	t.Parallel()
	root := writeModule(t, map[string]string{"planner/p.go": "package planner\n"})
	for _, rule := range []importRule{{"planer", []string{"planner"}, nil}, {"planner", []string{"adapters/matrix"}, nil}} {
		if _, _, err := importViolations(root, []importRule{rule}); err == nil || !strings.Contains(err.Error(), "not a folder") {
			t.Errorf("rule %+v: err = %v", rule, err)
		}
	}
}

func TestAdapterRulesCoverEveryAdapter(t *testing.T) {
	t.Parallel()
	root := writeModule(t, map[string]string{
		"adapters/a/a.go":     "package a\n\nimport _ \"" + modulePath + "/adapters/b\"\n",
		"adapters/b/b.go":     "package b\n\nimport _ \"" + modulePath + "/text\"\n",
		"text/text.go":        "package text\n\nimport _ \"" + modulePath + "/store\"\n",
		"store/s.go":          "package store\n",
		"bot/redisstore/p.go": "package redisstore\n",
		"cmd/x/main.go":       "package main\n\nfunc main() {}\n",
		"app/app.go":          "package app\n",
	})
	rules, err := adapterRules(root)
	if err != nil || len(rules) != 2 {
		t.Fatalf("rules = %+v, %v", rules, err)
	}
	violations, _, err := importViolations(root, rules)
	slices.Sort(violations)
	if err != nil || len(violations) != 3 ||
		!strings.Contains(violations[0], "adapters/a depends on adapters/b: adapters/a must not depend on adapters/b") ||
		!strings.Contains(violations[1], "adapters/a depends on store: adapters/a must not depend on store") ||
		!strings.Contains(violations[2], "adapters/b depends on store: adapters/b must not depend on store") {
		t.Fatalf("violations = %q, %v", violations, err)
	}
}

// Storage's rules name packages from outside the module too: an import of
// net/http or of a database driver, direct or through another package,
// is an arrow like any other.
func TestImportRulesCatchAnOutsidePackage(t *testing.T) {
	t.Parallel()
	root := writeModule(t, map[string]string{
		"store/s.go":   "package store\n\nimport _ \"net/http/httptrace\"\n",
		"board/b.go":   "package board\n\nimport _ \"" + modulePath + "/text\"\n",
		"text/text.go": "package text\n\nimport _ \"net/http\"\n",
		"web/w.go":     "package web\n\nimport _ \"net/http\"\n",
	})
	rules := []importRule{{"store", nil, []string{"net/http"}}, {"board", nil, []string{"net/http"}}}
	violations, _, err := importViolations(root, rules)
	slices.Sort(violations)
	if err != nil || len(violations) != 2 ||
		!strings.Contains(violations[0], "board depends on net/http: board must not depend on net/http") ||
		!strings.Contains(violations[1], "store depends on net/http/httptrace: store must not depend on net/http") {
		t.Fatalf("violations = %q, %v", violations, err)
	}
}

func TestLeafRulesForbidEveryPackageOfOurs(t *testing.T) {
	t.Parallel()
	root := writeModule(t, map[string]string{
		"signing/s.go":    "package signing\n\nimport _ \"" + modulePath + "/text\"\n",
		"text/text.go":    "package text\n",
		"board/b.go":      "package board\n\nimport _ \"" + modulePath + "/signing\"\n",
		"docs/readme.md":  "no Go here\n",
		"deploy/x/x.yaml": "no Go here either\n",
	})
	rules, err := leafRules(root, []string{"signing"})
	if err != nil || len(rules) != 1 || !slices.Equal(rules[0].forbidden, []string{"board", "text"}) {
		t.Fatalf("rules = %+v, %v", rules, err)
	}
	violations, _, err := importViolations(root, rules)
	if err != nil || len(violations) != 1 || !strings.Contains(violations[0], "signing depends on text") {
		t.Fatalf("violations = %q, %v", violations, err)
	}
}
