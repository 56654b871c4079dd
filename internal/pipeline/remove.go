package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// RosterStore is what removals need of the database; *state.Store implements it.
type RosterStore interface {
	ScanRoster(ctx context.Context, sync string, listID int64, fn func(state.RosterRow) error) error
	RecordRemoval(ctx context.Context, r state.Removal) error
}

// Removals is whom a sync unsubscribes once its rows are done (see Engine.Removals).
type Removals struct {
	// Absent are the members of the roster whose address and key the read did not contain.
	Absent []string
	// Moved are the addresses whose key came with another address (in this run or an
	// earlier one that ended before unsubscribing them).
	Moved []string
	// Dropped are moved addresses the suppression list holds as unsubscribed or bounced:
	// they leave the roster without a request.
	Dropped []string
	// Members is how many members the roster had before the run.
	Members int
}

// Complete reports whether the run (or dry run) read the whole source, and, resumed, every
// row before its checkpoint again, and the source was not cut short (sources.Truncated): only
// such a read may tell who left the source.
func (e *Engine) Complete() bool { return e.complete }

// Incomplete says why a read to the end of the source is not complete (see Complete), or "".
func (e *Engine) Incomplete() string { return e.incomplete }

// atEnd notes, from the last chunk, whether the read is complete.
func (e *Engine) atEnd(c *chunk) {
	switch {
	case c.gap:
		e.incomplete = "the run resumed and could not read again every row before its checkpoint"
	case c.cut > 0:
		e.incomplete = fmt.Sprintf("the source ends in a line that could not be read (line %d, without a line end: "+
			"was the file cut short?)", c.cut)
	}
	e.complete = e.incomplete == ""
}

// Removals returns whom the run unsubscribes at its end: the moved addresses and, with
// absent, the members the read did not contain. Neither includes an address the run read
// (a row that names a person never removes them), nor, among the absent, a person the
// suppression list holds as unsubscribed or bounced (they receive nothing already; an
// unsubscribe would turn a bounce into an unsubscribe). It needs Config.Roster, and a
// complete read for absent.
func (e *Engine) Removals(ctx context.Context, st RosterStore, absent bool) (Removals, error) {
	t := e.filt.track
	if t == nil {
		return Removals{}, errors.New("pipeline: removals need a roster")
	}
	if absent && !e.complete {
		return Removals{}, errors.New("pipeline: only a complete read tells who left the source")
	}
	e.filt.supChecked = time.Time{} // read the latest suppression list
	if err := e.filt.refreshSuppressions(ctx); err != nil {
		return Removals{}, err
	}
	r := Removals{Members: t.roster.Len()}
	err := st.ScanRoster(ctx, t.roster.Sync(), e.cfg.ListID, func(row state.RosterRow) error {
		if t.claims.Has(row.Email) {
			return nil
		}
		_, suppressed := e.filt.sup.Status(row.RosterEntry.Email)
		if t.moved.Has(row.RosterEntry.Email) && e.cfg.DryRun {
			// Moved by this dry run, which records nothing. (A run marks an address moved
			// when the service acknowledged the new one, not before.)
			row.Moved = true
		}
		switch {
		case row.Moved && suppressed:
			r.Dropped = append(r.Dropped, row.Address)
		case row.Moved:
			r.Moved = append(r.Moved, row.Address)
		case absent && !suppressed && !t.present(row.RosterEntry.Email, row.Key):
			r.Absent = append(r.Absent, row.Address)
		}
		return nil
	})
	return r, err
}

// Unsubscribe sends the addresses through bulkinsert's status=unsubscribed form, in
// requests of at most 1000, one request at a time: each acknowledged request is recorded
// (the run's removed count, the roster) before the next is sent, so a run that stops or dies
// sends again at most the one request it had in flight. dropped leave the roster with the
// first record. It returns how many the service acknowledged.
func (e *Engine) Unsubscribe(ctx context.Context, st RosterStore, emails, dropped []string) (int, error) {
	t := e.filt.track
	if t == nil {
		return 0, errors.New("pipeline: removals need a roster")
	}
	done := 0
	rec := state.Removal{RunID: e.cfg.RunID, Owner: e.cfg.Owner, TTL: e.cfg.LeaseTTL, Sync: t.roster.Sync(),
		ListID: e.cfg.ListID, Dropped: dropped}
	rows := make([]sink.Subscriber, 0, sink.MaxBatchRows)
	for start := 0; start < len(emails) || rec.Dropped != nil; start += sink.MaxBatchRows {
		if e.stopping() {
			return done, ErrInterrupted
		}
		batch := emails[start:min(start+sink.MaxBatchRows, len(emails))]
		rec.Removed, rec.Requests, rec.Retries = batch, 0, 0
		if len(batch) > 0 {
			rows = rows[:0]
			for _, a := range batch {
				rows = append(rows, sink.Subscriber{Email: a})
			}
			res, err := e.cfg.Sender.InsertBatch(ctx, sink.BulkOptions{ListID: e.cfg.ListID, Status: sink.StatusUnsubscribed}, rows)
			rec.Requests, rec.Retries = int64(res.Requests), int64(res.Retries)
			if err != nil {
				return done, fmt.Errorf("unsubscribe people who left the source: %w", err)
			}
			if len(res.Rejects) > 0 {
				rec.Removed = refusedOut(batch, res.Rejects)
			}
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
		err := st.RecordRemoval(wctx, rec)
		cancel()
		if err != nil {
			return done, err
		}
		done += len(rec.Removed)
		if e.cfg.OnCommit != nil {
			e.cfg.OnCommit(state.Counts{Removed: int64(len(rec.Removed)), Requests: rec.Requests, Retries: rec.Retries})
		}
		rec.Dropped = nil
	}
	return done, nil
}

// refusedOut returns the addresses of batch the service did not refuse.
func refusedOut(batch []string, refused []sink.RowReject) []string {
	out := make([]string, 0, len(batch))
	k := 0
	for i, a := range batch {
		if k < len(refused) && refused[k].Index == i {
			k++
			continue
		}
		out = append(out, a)
	}
	return out
}
