package codesize

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The limits of the guide, and the packages they hold for (from the module's root).
const (
	maxFileLines = 400
	maxFuncLines = 80
)

var packages = []string{"jobs", filepath.Join("internal", "pipeline"), "state"}

// TestSizes fails for a production file over maxFileLines lines or a function (or method,
// or function literal assigned at the top level) over maxFuncLines lines, counted from
// the line of func to the line of its closing brace.
func TestSizes(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	for _, pkg := range packages {
		files, err := filepath.Glob(filepath.Join(root, pkg, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, "no Go files in %s", pkg)
		sort.Strings(files)
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			for _, problem := range measure(t, path) {
				t.Error(problem)
			}
		}
	}
}

// measure returns what is over its limit in the file at path.
func measure(t *testing.T, path string) []string {
	t.Helper()
	src, err := os.ReadFile(path)
	require.NoError(t, err)
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	require.NoError(t, err)
	rel, _ := filepath.Rel(filepath.Join("..", ".."), path)
	var problems []string
	if n := fset.File(file.Pos()).LineCount(); n > maxFileLines {
		problems = append(problems, fmt.Sprintf("%s: %d lines, over %d", rel, n, maxFileLines))
	}
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		if n > maxFuncLines {
			problems = append(problems, fmt.Sprintf("%s: func %s is %d lines, over %d", rel, funcName(fn), n, maxFuncLines))
		}
	}
	return problems
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	if idx, ok := typ.(*ast.IndexExpr); ok {
		typ = idx.X
	}
	if id, ok := typ.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
