package config_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestDefaultsLiveOnce keeps every default in one package: a constant named XDefault with a
// value of its own (not a reference to another package's constant) may be declared by one
// package only. config refers to the defaults the client and the worker apply themselves.
func TestDefaultsLiveOnce(t *testing.T) {
	t.Parallel()
	owner := map[string]string{}
	for _, dir := range []string{"../config", "../jobs", "../sink", "../sources", "../mapping", "../state", "../cli"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if !strings.HasSuffix(name.Name, "Default") || i >= len(vs.Values) {
							continue
						}
						if _, ref := vs.Values[i].(*ast.SelectorExpr); ref {
							continue
						}
						if prev, dup := owner[name.Name]; dup && prev != dir {
							t.Errorf("%s is declared in %s and in %s: got two definitions, want one the other refers to", name.Name, prev, dir)
						}
						owner[name.Name] = dir
					}
				}
			}
		}
	}
}
