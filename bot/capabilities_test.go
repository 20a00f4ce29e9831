package bot_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// The engine finds none of its capabilities by type assertion: each is a
// field of Deps or of a Surface, so what production wires is what the
// engine uses. An assertion to one of the package's interfaces fails this.
func TestNoCapabilityIsDiscoveredByTypeAssertion(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	interfaces := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		ast.Inspect(f, func(n ast.Node) bool {
			if ts, ok := n.(*ast.TypeSpec); ok {
				if _, ok := ts.Type.(*ast.InterfaceType); ok {
					interfaces[ts.Name.Name] = true
				}
			}
			return true
		})
	}
	if len(interfaces) < 10 {
		t.Fatalf("found only %d interfaces in package bot; is the test in the right folder?", len(interfaces))
	}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			ta, ok := n.(*ast.TypeAssertExpr)
			if !ok || ta.Type == nil {
				return true
			}
			if id, ok := ta.Type.(*ast.Ident); ok && interfaces[id.Name] {
				t.Errorf("%s: a type assertion to %s discovers a capability; make it a field of Deps or Registration", fset.Position(ta.Pos()), id.Name)
			}
			return true
		})
	}
}
