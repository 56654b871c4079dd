package jobs

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/subsync/subsync/internal/secret"
	"github.com/subsync/subsync/state"
)

// Named parameters of a sql write-back statement.
const (
	ParamEmail        = "email"         // the e-mail address, trimmed and lower-cased (text)
	ParamStatus       = "status"        // active, unsubscribed or bounce (text)
	ParamStatusMobile = "status_mobile" // the SMS status, or "" (text)
	ParamChangedAt    = "changed_at"    // when the service recorded the change (a UTC time.Time)
	ParamSubscriberID = "subscriber_id" // the service's subscriber id, 0 when unknown (integer)
	ParamListID       = "list_id"       // the list the change applies to (integer)
)

var writeBackParams = []string{ParamEmail, ParamStatus, ParamStatusMobile, ParamChangedAt, ParamSubscriberID, ParamListID}

// writeBackDriver returns the database/sql driver name for a configured driver, "" when
// unknown.
func writeBackDriver(d string) string {
	switch d {
	case "pgx", "postgres", "postgresql":
		return "pgx"
	case "mysql", "sqlite":
		return d
	}
	return ""
}

// CheckWriteBackStatement checks a sql write-back statement: it must use at least one named
// parameter, only those listed above (:email, :status, :status_mobile, :changed_at,
// :subscriber_id, :list_id), and no positional placeholders (?, $1). Parameters are
// recognised outside quoted strings, quoted identifiers and comments; a Postgres cast
// (::timestamptz) is not a parameter.
func CheckWriteBackStatement(stmt string) error {
	_, err := bindNamed(stmt, "pgx")
	if err == nil {
		_, err = bindNamed(stmt, "mysql")
	}
	return err
}

// namedStatement is a write-back statement rewritten for one driver: its query, and the
// named parameter behind each placeholder, in order.
type namedStatement struct {
	query  string
	params []string
}

// bindNamed rewrites the :name parameters of stmt to the driver's placeholders: $1, $2 … for
// pgx (a name used twice keeps its number), ? for mysql and sqlite (one per use).
func bindNamed(stmt, driver string) (namedStatement, error) {
	if strings.TrimSpace(stmt) == "" {
		return namedStatement{}, errors.New("the statement is empty")
	}
	var b strings.Builder
	var ns namedStatement
	numbers := map[string]int{}
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
				return namedStatement{}, fmt.Errorf("unterminated %c quote at byte %d", c, i)
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
				return namedStatement{}, fmt.Errorf("unterminated comment at byte %d", i)
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
			if !slices.Contains(writeBackParams, name) {
				return namedStatement{}, fmt.Errorf("unknown parameter :%s (want :%s)", name, strings.Join(writeBackParams, ", :"))
			}
			if driver == "pgx" {
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
			return namedStatement{}, fmt.Errorf("positional placeholder %q at byte %d: name the parameters (:email, :status, …)", c, i)
		default:
			b.WriteByte(c)
			i++
		}
	}
	if len(ns.params) == 0 {
		return namedStatement{}, errors.New("the statement uses no parameter: name at least :email (or :subscriber_id)")
	}
	ns.query = b.String()
	return ns, nil
}

// args returns the statement's arguments for one change.
func (ns namedStatement) args(c state.StatusChange) []any {
	out := make([]any, len(ns.params))
	for i, p := range ns.params {
		switch p {
		case ParamEmail:
			out[i] = c.Email
		case ParamStatus:
			out[i] = c.Status
		case ParamStatusMobile:
			out[i] = c.StatusMobile
		case ParamChangedAt:
			out[i] = c.ChangedAt.UTC()
		case ParamSubscriberID:
			out[i] = c.SubscriberID
		case ParamListID:
			out[i] = c.ListID
		}
	}
	return out
}

// writeBacker writes status changes back to a source. write applies all of them, or none.
type writeBacker interface {
	write(ctx context.Context, wbs []state.WriteBack) error
}

// newWriteBacker returns the writer of a write-back spec; nil when none is configured.
func newWriteBacker(spec WriteBackSpec) (writeBacker, error) {
	switch spec.Kind {
	case "":
		return nil, nil
	case WriteBackSQL:
		driver := writeBackDriver(spec.Driver)
		ns, err := bindNamed(spec.Statement, driver)
		if err != nil {
			return nil, fmt.Errorf("write-back statement: %w", err)
		}
		return &sqlWriteBack{driver: driver, dsn: spec.DSN, stmt: ns}, nil
	case WriteBackCSV:
		return &csvWriteBack{path: spec.Path}, nil
	}
	return nil, fmt.Errorf("write-back kind %q: want %q or %q", spec.Kind, WriteBackSQL, WriteBackCSV)
}

// sqlWriteBack runs the configured statement once per change, in one transaction.
type sqlWriteBack struct {
	driver, dsn string
	stmt        namedStatement
}

func (w *sqlWriteBack) write(ctx context.Context, wbs []state.WriteBack) error {
	if err := w.writeTx(ctx, wbs); err != nil {
		return secret.ScrubDSN(err, w.driver, w.dsn)
	}
	return nil
}

func (w *sqlWriteBack) writeTx(ctx context.Context, wbs []state.WriteBack) error {
	db, err := sql.Open(w.driver, w.dsn)
	if err != nil {
		return fmt.Errorf("open the write-back database: %w", err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("connect to the write-back database: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	stmt, err := tx.PrepareContext(ctx, w.stmt.query)
	if err != nil {
		return fmt.Errorf("prepare the write-back statement: %w", err)
	}
	defer stmt.Close()
	for _, wb := range wbs {
		if _, err := stmt.ExecContext(ctx, w.stmt.args(wb.Change)...); err != nil {
			return fmt.Errorf("write back %s %s: %w", wb.Change.Email, wb.Change.Status, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit the write-back: %w", err)
	}
	return nil
}

// csvWriteBackHeader is the header of a csv write-back file. id is the write-back's id: a
// line repeated after a crash (see WriteBackSpec) repeats its id.
var csvWriteBackHeader = []string{"changed_at", "email", "status", "status_mobile", "list_id", "subscriber_id", "id"}

// csvWriteBack appends the changes to a CSV file, writing the header when the file is new.
type csvWriteBack struct{ path string }

func (w *csvWriteBack) write(_ context.Context, wbs []state.WriteBack) error {
	if err := os.MkdirAll(filepath.Dir(w.path), 0o750); err != nil {
		return fmt.Errorf("write back to %s: %w", w.path, err)
	}
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("write back to %s: %w", w.path, err)
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("write back to %s: %w", w.path, err)
	}
	var buf bytes.Buffer
	cw := csv.NewWriter(&buf)
	if info.Size() == 0 {
		_ = cw.Write(csvWriteBackHeader)
	}
	for _, wb := range wbs {
		c := wb.Change
		_ = cw.Write([]string{c.ChangedAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), c.Email, c.Status, c.StatusMobile,
			strconv.FormatInt(c.ListID, 10), strconv.FormatInt(c.SubscriberID, 10), strconv.FormatInt(wb.ID, 10)})
	}
	cw.Flush()
	// One write of whole lines, synced before the changes are marked done.
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write back to %s: %w", w.path, err)
	}
	return nil
}

// writeBackMax is how many pending write-backs one write (one SQL transaction) carries; a
// pull with more writes them in several.
const writeBackMax = 100_000

// writeBack writes the pending changes of the target back to the source, oldest first, in
// one write (one SQL transaction) of up to writeBackMax changes, then marks them done. On a
// failure each change of the write records the failed attempt and stays pending for the next
// pull. It returns how many changes were written.
func (rt *Runtime) writeBack(ctx context.Context, wb writeBacker, target string) (int, error) {
	written := 0
	for {
		pending, err := rt.store.PendingWriteBacks(ctx, target, writeBackMax)
		if err != nil || len(pending) == 0 {
			return written, err
		}
		ids := make([]int64, len(pending))
		for i, p := range pending {
			ids[i] = p.ID
		}
		started := time.Now()
		werr := wb.write(ctx, pending)
		// Marked even when ctx ended meanwhile: what was committed must not be written again.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
		err = rt.store.CompleteWriteBacks(mctx, ids, werr)
		cancel()
		if werr != nil || err != nil {
			return written, errors.Join(werr, err)
		}
		written += len(pending)
		rt.log.DebugContext(ctx, "status changes written back", "target", target, "changes", len(pending),
			"duration", time.Since(started))
		if len(pending) < writeBackMax {
			return written, nil
		}
	}
}
