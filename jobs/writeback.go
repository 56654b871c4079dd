package jobs

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/subsync/subsync/sources"
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

// CheckWriteBackStatement checks a sql write-back statement: it must use at least one named
// parameter, only those listed above (:email, :status, :status_mobile, :changed_at,
// :subscriber_id, :list_id), and no positional placeholders (?, $1). Parameters are
// recognised outside quoted strings, quoted identifiers and comments; a Postgres cast
// (::timestamptz) is not a parameter.
func CheckWriteBackStatement(stmt string) error {
	_, err := sources.BindSQL("pgx", stmt, writeBackParams)
	if err == nil {
		_, err = sources.BindSQL("mysql", stmt, writeBackParams)
	}
	return err
}

// changeRows are the changes of one write-back, as the statement's rows.
type changeRows []state.WriteBack

func (r changeRows) Len() int { return len(r) }

func (r changeRows) Describe(i int) string {
	return "write back " + r[i].Change.Email + " " + r[i].Change.Status
}

func (r changeRows) Arg(i int, name string) any {
	c := r[i].Change
	switch name {
	case ParamEmail:
		return c.Email
	case ParamStatus:
		return c.Status
	case ParamStatusMobile:
		return c.StatusMobile
	case ParamChangedAt:
		return c.ChangedAt.UTC()
	case ParamSubscriberID:
		return c.SubscriberID
	case ParamListID:
		return c.ListID
	}
	return nil
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
		stmt, err := sources.BindSQL(spec.Driver, spec.Statement, writeBackParams)
		if err != nil {
			return nil, fmt.Errorf("write-back statement: %w", err)
		}
		return &sqlWriteBack{dsn: spec.DSN, stmt: stmt}, nil
	case WriteBackCSV:
		return &csvWriteBack{path: spec.Path}, nil
	}
	return nil, fmt.Errorf("write-back kind %q: want %q or %q", spec.Kind, WriteBackSQL, WriteBackCSV)
}

// sqlWriteBack runs the configured statement once per change, in one transaction (see
// sources.ExecSQL).
type sqlWriteBack struct {
	dsn  string
	stmt sources.SQLStatement
}

func (w *sqlWriteBack) write(ctx context.Context, wbs []state.WriteBack) error {
	if err := sources.ExecSQL(ctx, w.dsn, w.stmt, changeRows(wbs)); err != nil {
		return fmt.Errorf("sql write-back: %w", err)
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
		rt.log.DebugContext(ctx, "status changes written back", slog.String("target", target), slog.Int("changes", len(pending)),
			slog.Duration("duration", time.Since(started)))
		if len(pending) < writeBackMax {
			return written, nil
		}
	}
}
