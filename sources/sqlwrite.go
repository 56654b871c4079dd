package sources

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/subsync/subsync/internal/secret"
)

// SQLStatement is a statement written with :name parameters, bound to one driver's
// placeholders: $1, $2 … for Postgres (a name used twice keeps its number), ? for MySQL
// and SQLite (one per use). Get one from [BindSQL].
type SQLStatement struct {
	driver string
	query  string
	params []string
}

// Query is the statement as the driver runs it.
func (s SQLStatement) Query() string { return s.query }

// Params are the names of the parameters behind the placeholders, in order.
func (s SQLStatement) Params() []string { return s.params }

// BindSQL binds the :name parameters of stmt, each one of names, to the placeholders of
// driver. Parameters are recognised outside quoted strings, quoted identifiers and comments
// (and MySQL's backslash escapes); a Postgres cast (::timestamptz) is not a parameter. A
// statement must use at least one parameter and no positional placeholder (?, $1).
func BindSQL(driver, stmt string, names []string) (SQLStatement, error) {
	if strings.TrimSpace(stmt) == "" {
		return SQLStatement{}, errors.New("the statement is empty")
	}
	var b strings.Builder
	ns := SQLStatement{driver: driver}
	numbers := map[string]int{}
	numbered := isPostgres(driver)
	mysqlEscapes := driver == "mysql"
	isWord := func(c byte, first bool) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	for i := 0; i < len(stmt); {
		c := stmt[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			// A quoted string or identifier, doubled quotes inside (and backslash escapes in
			// MySQL strings).
			j := i + 1
			for j < len(stmt) {
				if mysqlEscapes && c != '`' && stmt[j] == '\\' {
					j += 2
					continue
				}
				if stmt[j] == c {
					if j+1 < len(stmt) && stmt[j+1] == c {
						j += 2
						continue
					}
					break
				}
				j++
			}
			if j >= len(stmt) {
				return SQLStatement{}, fmt.Errorf("unterminated %c quote at byte %d", c, i)
			}
			b.WriteString(stmt[i : j+1])
			i = j + 1
		case c == '-' && i+1 < len(stmt) && stmt[i+1] == '-':
			j := strings.IndexByte(stmt[i:], '\n')
			if j < 0 {
				j = len(stmt) - i
			}
			b.WriteString(stmt[i : i+j])
			i += j
		case c == '/' && i+1 < len(stmt) && stmt[i+1] == '*':
			j := strings.Index(stmt[i+2:], "*/")
			if j < 0 {
				return SQLStatement{}, fmt.Errorf("unterminated comment at byte %d", i)
			}
			b.WriteString(stmt[i : i+2+j+2])
			i += 2 + j + 2
		case c == ':' && i+1 < len(stmt) && stmt[i+1] == ':':
			b.WriteString("::")
			i += 2
		case c == ':' && i+1 < len(stmt) && isWord(stmt[i+1], true):
			j := i + 1
			for j < len(stmt) && isWord(stmt[j], false) {
				j++
			}
			name := stmt[i+1 : j]
			if !slices.Contains(names, name) {
				return SQLStatement{}, fmt.Errorf("unknown parameter :%s (want :%s)", name, strings.Join(names, ", :"))
			}
			if numbered {
				n, ok := numbers[name]
				if !ok {
					ns.params = append(ns.params, name)
					n = len(ns.params)
					numbers[name] = n
				}
				b.WriteString("$" + strconv.Itoa(n))
			} else {
				ns.params = append(ns.params, name)
				b.WriteByte('?')
			}
			i = j
		case c == '?' || c == '$' && i+1 < len(stmt) && stmt[i+1] >= '0' && stmt[i+1] <= '9':
			return SQLStatement{}, fmt.Errorf("positional placeholder %q at byte %d: name the parameters (:%s, …)", c, i, names[0])
		default:
			b.WriteByte(c)
			i++
		}
	}
	if len(ns.params) == 0 {
		return SQLStatement{}, fmt.Errorf("the statement uses no parameter: name at least :%s", names[0])
	}
	ns.query = b.String()
	return ns, nil
}

// SQLRows are the rows a statement runs for: [ExecSQL] runs it once per row.
type SQLRows interface {
	// Len is the number of rows.
	Len() int
	// Arg is the value of the named parameter for row i.
	Arg(i int, name string) any
	// Describe names row i in an error ("a@example.com bounce").
	Describe(i int) string
}

// ExecSQL runs stmt once per row, all rows in one transaction on the database dsn names:
// every row is applied, or none. It returns, for each row, how many rows of the database the
// statement matched (an UPDATE's WHERE; on MySQL and MariaDB the rows found, not only those
// it changed), or -1 where the driver cannot tell. An error never shows the DSN or its
// password.
func ExecSQL(ctx context.Context, dsn string, stmt SQLStatement, rows SQLRows) ([]int64, error) {
	n, err := execSQL(ctx, dsn, stmt, rows)
	if err != nil {
		return nil, secret.ScrubDSN(err, stmt.driver, dsn)
	}
	return n, nil
}

// PrepareSQL prepares stmt on the database dsn names, in a transaction it rolls back, without
// running it: the database checks its syntax, tables and columns (subsync doctor). An error
// never shows the DSN or its password.
func PrepareSQL(ctx context.Context, dsn string, stmt SQLStatement) error {
	err := withTx(ctx, dsn, stmt.driver, func(tx *sql.Tx) error {
		prepared, err := tx.PrepareContext(ctx, stmt.query)
		if err != nil {
			return fmt.Errorf("prepare the statement: %w", err)
		}
		return prepared.Close()
	})
	return secret.ScrubDSN(err, stmt.driver, dsn)
}

// withTx runs fn in a transaction on the database dsn names, rolled back unless fn commits it.
func withTx(ctx context.Context, dsn, driver string, fn func(tx *sql.Tx) error) error {
	if driver == "mysql" {
		// Affected rows are the rows found, as on the other databases: an UPDATE that sets
		// the value a row already holds matched it.
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			return fmt.Errorf("open the database: %w", err)
		}
		cfg.ClientFoundRows = true
		dsn = cfg.FormatDSN()
	}
	db, err := sql.Open(databaseSQLDriver(driver), dsn)
	if err != nil {
		return fmt.Errorf("open the database: %w", err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("connect to the database: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

func execSQL(ctx context.Context, dsn string, stmt SQLStatement, rows SQLRows) ([]int64, error) {
	matched := make([]int64, rows.Len())
	err := withTx(ctx, dsn, stmt.driver, func(tx *sql.Tx) error {
		prepared, err := tx.PrepareContext(ctx, stmt.query)
		if err != nil {
			return fmt.Errorf("prepare the statement: %w", err)
		}
		defer prepared.Close()
		args := make([]any, len(stmt.params))
		for i := range rows.Len() {
			for j, name := range stmt.params {
				args[j] = rows.Arg(i, name)
			}
			res, err := prepared.ExecContext(ctx, args...)
			if err != nil {
				return fmt.Errorf("%s: %w", rows.Describe(i), err)
			}
			if matched[i], err = res.RowsAffected(); err != nil {
				matched[i] = -1
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("commit: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return matched, nil
}
