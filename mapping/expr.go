package mapping

import (
	"errors"
	"fmt"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// Expressions (Spec.Where, Spec.Computed) are written in the expression language of
// github.com/expr-lang/expr (https://expr-lang.org): the row's columns are variables by their
// names (Land == "NO"), a column whose name is not an identifier is $env["E-mail Address"],
// and every value is a string. They are parsed when the mapping is read (a syntax error names
// its line and column) and compiled once per run against the source's header (a column the
// source lacks is an error then).

// CodeFiltered is the code of the Reject that Map returns for a row the mapping's where
// expression leaves out: such a row is not a reject, it is counted as filtered.
const CodeFiltered = "filtered"

// CodeExpressionFailed: a computed field's expression failed on the row (or gave a value of
// no use); the row is rejected.
const CodeExpressionFailed = "expression_failed"

// checkExpr parses an expression and says where its syntax error is, if it has one.
func checkExpr(src string) error {
	if strings.TrimSpace(src) == "" {
		return errors.New("an expression cannot be empty")
	}
	if _, err := parser.Parse(src); err != nil {
		return exprError(err)
	}
	return nil
}

// exprError words an expression's error with its position: "syntax error at line 1,
// column 7: unexpected token …".
func exprError(err error) error {
	var fe *file.Error
	if errors.As(err, &fe) {
		return fmt.Errorf("error at line %d, column %d: %s", fe.Line, fe.Column+1, fe.Message)
	}
	return err
}

// computedOp is a target whose value an expression computes from the row.
type computedOp struct {
	key  string // the TOML key (computed.firstname)
	prog *vm.Program
	op   op
}

// exprEnv is the environment expressions are compiled against: each column of the header
// as a string.
func (m *Mapper) exprEnv() map[string]any {
	env := make(map[string]any, len(m.header))
	for _, h := range m.header {
		env[h] = ""
	}
	return env
}

// compileExprs compiles the where expression and the computed targets of spec against the
// header. claim takes each computed target (two ways to fill one target are a problem).
func (m *Mapper) compileExprs(e *SpecError, spec Spec, fields Fields, claim func(target, key string)) {
	if spec.Where == "" && len(spec.Computed) == 0 {
		return
	}
	env := m.exprEnv()
	if spec.Where != "" {
		prog, err := expr.Compile(spec.Where, expr.Env(env), expr.AsBool())
		if err != nil {
			e.add("where", "%v", exprError(err))
		}
		m.where = prog
	}
	for _, target := range sortedKeys(spec.Computed) {
		key := keyPath("computed", target)
		c, err := parseTarget(target)
		if err != nil {
			e.add(key, "%v", err)
			continue
		}
		claim(targetString(c), key)
		var p PlanEntry
		o, msg := m.columnOp(c, fields, spec.CreateMissing, &p)
		if msg != "" {
			e.add(key, "%s", msg)
			continue
		}
		o.column, o.field, o.col, o.slot = key, fieldNamed(o.name), -1, -1
		prog, err := expr.Compile(spec.Computed[target], expr.Env(env))
		if err != nil {
			e.add(key, "%v", exprError(err))
			continue
		}
		m.computed = append(m.computed, computedOp{key: key, prog: prog, op: o})
	}
}

// rowEnv is the environment of one record.
func (m *Mapper) rowEnv(rec *sources.Record) map[string]any {
	env := make(map[string]any, len(m.header))
	for i, h := range m.header {
		v := ""
		if i < len(rec.Values) {
			v = strings.TrimSpace(rec.Values[i])
		}
		env[h] = v
	}
	return env
}

// filtered reports whether the where expression leaves the record out; env is the record's
// environment, made on first use.
func (m *Mapper) filtered(rec *sources.Record, env *map[string]any) (bool, *Reject) {
	if m.where == nil {
		return false, nil
	}
	*env = m.rowEnv(rec)
	out, err := expr.Run(m.where, *env)
	if err != nil {
		return false, m.rejectAt(rec, "where", "", CodeExpressionFailed, "the where expression failed: "+err.Error())
	}
	keep, _ := out.(bool)
	return !keep, nil
}

// applyComputed computes each computed target of the record and maps its value as a value of
// that target; it returns the problems found.
func (m *Mapper) applyComputed(a *Arena, row *Row, rec *sources.Record, env map[string]any) []*Reject {
	if env == nil {
		env = m.rowEnv(rec)
	}
	var rejs []*Reject
	for i := range m.computed {
		c := &m.computed[i]
		out, err := expr.Run(c.prog, env)
		if err != nil {
			rejs = append(rejs, m.rejectAt(rec, c.key, "", CodeExpressionFailed, "the expression failed: "+err.Error()))
			continue
		}
		v := ""
		switch x := out.(type) {
		case nil:
		case string:
			v = x
		case []any, map[string]any:
			rejs = append(rejs, m.rejectAt(rec, c.key, "", CodeExpressionFailed, fmt.Sprintf("the expression gave %T, not a value", out)))
			continue
		default:
			v = fmt.Sprint(x)
		}
		if rej := m.applyClean(a, row, &c.op, rec, v); rej != nil {
			rejs = append(rejs, rej)
		}
	}
	return rejs
}

// computableTarget reports whether a computed expression may fill target.
func computableTarget(to string) bool {
	return to != sink.FieldEmail && to != TargetTags && to != TargetIgnore
}
