package jobs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// writeBacker writes status changes back to a source. write applies all of them, or none,
// and reports for each whether the source held anything it applied to (an UPDATE that
// matched a row; a person found in a CSV file).
type writeBacker interface {
	write(ctx context.Context, wbs []state.WriteBack) (matched []bool, err error)
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
		if spec.EmailColumn != "" {
			return &csvUpdate{path: spec.Path, emailColumn: spec.EmailColumn,
				statusColumn: cmp.Or(spec.StatusColumn, StatusColumnDefault), changedAtColumn: spec.ChangedAtColumn}, nil
		}
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

func (w *sqlWriteBack) write(ctx context.Context, wbs []state.WriteBack) ([]bool, error) {
	n, err := sources.ExecSQL(ctx, w.dsn, w.stmt, changeRows(wbs))
	if err != nil {
		return nil, fmt.Errorf("sql write-back: %w", err)
	}
	matched := make([]bool, len(n))
	for i, rows := range n {
		matched[i] = rows != 0 // -1: the driver cannot tell, taken as applied
	}
	return matched, nil
}

// csvWriteBackHeader is the header of a csv write-back file. id is the write-back's id: a
// line repeated after a crash (see WriteBackSpec) repeats its id.
var csvWriteBackHeader = []string{"changed_at", "email", "status", "status_mobile", "list_id", "subscriber_id", "id"}

// csvWriteBack appends the changes to a CSV file, writing the header when the file is new.
type csvWriteBack struct{ path string }

func (w *csvWriteBack) write(_ context.Context, wbs []state.WriteBack) ([]bool, error) {
	if err := w.append(wbs); err != nil {
		return nil, err
	}
	matched := make([]bool, len(wbs))
	for i := range matched {
		matched[i] = true // the file is the target: every change is in it now
	}
	return matched, nil
}

func (w *csvWriteBack) append(wbs []state.WriteBack) error {
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

// writeBack writes the due changes of the target back to the source (the pending ones and
// the unmatched ones to try again: see state.Store.DueWriteBacks), oldest first, in one
// write (one SQL transaction) of up to writeBackMax changes, then marks each done or
// unmatched. On a failure each change of the write records the failed attempt and stays as it
// was, for the next pull. It returns how many changes were applied to the source and how many
// matched nothing there.
func (rt *Runtime) writeBack(ctx context.Context, wb writeBacker, target string) (written, unmatched int, err error) {
	tries := 1 + cmp.Or(rt.cfg.StatusPull.WriteBack.UnmatchedRetries, UnmatchedRetriesDefault)
	for {
		due, err := rt.store.DueWriteBacks(ctx, target, writeBackMax, tries)
		if err != nil || len(due) == 0 {
			return written, unmatched, err
		}
		ids := make([]int64, len(due))
		for i, p := range due {
			ids[i] = p.ID
		}
		started := time.Now()
		matched, werr := wb.write(ctx, due)
		// Marked even when ctx ended meanwhile: what was committed must not be written again.
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
		if werr != nil {
			err = rt.store.CompleteWriteBacks(mctx, ids, werr)
		} else {
			var done, none []int64
			for i, id := range ids {
				if matched[i] {
					done = append(done, id)
				} else {
					none = append(none, id)
				}
			}
			err = rt.store.MarkWriteBacks(mctx, done, none)
			written += len(done)
			unmatched += len(none)
			if len(none) > 0 {
				rt.metrics.writeBackUnmatched.WithLabelValues(target).Add(float64(len(none)))
			}
		}
		cancel()
		if werr != nil || err != nil {
			return written, unmatched, errors.Join(werr, err)
		}
		rt.log.DebugContext(ctx, "status changes written back", slog.String("target", target), slog.Int("changes", len(due)),
			slog.Duration("duration", time.Since(started)))
		if len(due) < writeBackMax {
			return written, unmatched, nil
		}
	}
}

// writeBackPending writes every due change back to the source (see writeBack), counting those
// applied as written back and those that matched nothing as unmatched. A write that failed
// does not fail the pull (the suppression list is up to date): it is the run's note, and the
// changes stay for the next pull. Changes that matched nothing are the run's note too, and a
// warning in the log.
func (rt *Runtime) writeBackPending(ctx context.Context, a *attempt, wb writeBacker) error {
	spec := rt.cfg.StatusPull.WriteBack
	written, unmatched, werr := rt.writeBack(ctx, wb, spec.Kind)
	if written > 0 || unmatched > 0 {
		d := state.Counts{Sent: int64(written), Unmatched: int64(unmatched)}
		if err := rt.store.Checkpoint(ctx, state.Checkpoint{RunID: a.run.ID, Owner: a.owner, TTL: rt.cfg.LeaseTTL,
			Position: a.run.Position, Delta: d}); err != nil {
			return err
		}
		rt.metrics.addCounts(KindStatusPull, "", d)
		a.log.InfoContext(ctx, "status changes written back", slog.String("target", spec.Kind), slog.Int("changes", written),
			slog.Int("unmatched", unmatched))
	}
	if unmatched > 0 {
		retries := cmp.Or(spec.UnmatchedRetries, UnmatchedRetriesDefault)
		msg := fmt.Sprintf("%d %s matched nothing in the source (%s): it holds no row with the address; "+
			"tried again on the next %d pulls, see subsync status", unmatched, plural(int64(unmatched), "change", "changes"), spec, retries)
		a.warning = strings.TrimPrefix(a.warning+"; "+msg, "; ")
		a.log.WarnContext(ctx, "status changes matched nothing in the source", slog.String("target", spec.Kind),
			slog.Int("unmatched", unmatched), slog.Int("retries", retries))
	}
	if werr != nil {
		if ctx.Err() != nil {
			return werr
		}
		msg := fmt.Sprintf("%s failed; %s: %v", spec, writeBackFailedNote, werr)
		a.warning = strings.TrimPrefix(a.warning+"; "+msg, "; ")
		a.log.WarnContext(ctx, "status write-back failed; retried on the next pull", slog.String("target", spec.Kind), slog.Any("error", werr))
	}
	return nil
}
