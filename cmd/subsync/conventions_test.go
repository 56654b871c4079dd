package main_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogsUseTypedAttributes keeps every log call of the module on typed attributes
// (slog.String, slog.Int64, …): a call to a logger method that passes a bare string key
// ("job_id", id) fails.
func TestLogsUseTypedAttributes(t *testing.T) {
	t.Parallel()
	msgArg := map[string]int{"Debug": 0, "Info": 0, "Warn": 0, "Error": 0,
		"DebugContext": 1, "InfoContext": 1, "WarnContext": 1, "ErrorContext": 1}
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			i, ok := msgArg[sel.Sel.Name]
			if !ok || !strings.Contains(strings.ToLower(exprString(sel.X)), "log") {
				return true
			}
			for _, arg := range call.Args[min(i+1, len(call.Args)):] {
				if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					t.Errorf("%s: %s(…, %s, …): got a bare key, want a typed attribute (slog.String, slog.Int64, …)",
						fset.Position(lit.Pos()), sel.Sel.Name, lit.Value)
				}
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	case *ast.CallExpr:
		return exprString(x.Fun)
	}
	return ""
}

// TestArchitectureNamesRealPaths keeps ARCHITECTURE.md from rotting: every path it names
// exists.
func TestArchitectureNamesRealPaths(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	require.NoError(t, err)
	paths := regexp.MustCompile("`([a-z0-9_]+(?:/[a-z0-9_.]+)+)`").FindAllStringSubmatch(string(doc), -1)
	require.NotEmpty(t, paths)
	for _, m := range paths {
		p := m[1]
		_, err := os.Stat(filepath.Join(root, filepath.FromSlash(p)))
		require.NoError(t, err, "ARCHITECTURE.md names %s", p)
	}
}
