package state

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Claim describes the run of a job an attempt wants to work.
type Claim struct {
	JobID       int64
	Kind        string
	Name        string
	ListID      int64
	Source      string
	ScheduledAt time.Time
	// Owner is a token unique to this attempt; Worker names the worker for people.
	Owner  string
	Worker string
	// TTL is how long the lease lasts without renewal.
	TTL time.Duration
}

// ClaimRun creates the run of a job if it does not exist, and takes its lease for the caller.
// It fails with ErrRunFinished (returning the run) when the run is final, and with
// ErrLeaseHeld when another owner's lease has not expired.
func (s *Store) ClaimRun(ctx context.Context, c Claim) (Run, error) {
	if c.Owner == "" || c.TTL <= 0 {
		return Run{}, errors.New("claim run: owner and TTL are required")
	}
	var run Run
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		now := s.d.nowExpr()
		if _, err := tx.ExecContext(ctx, `INSERT INTO subsync_run
    (job_id, kind, name, list_id, source, state, scheduled_at, started_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, `+now+`, `+now+`)
ON CONFLICT (job_id) DO NOTHING`,
			c.JobID, c.Kind, c.Name, c.ListID, c.Source, string(RunRunning), micros(c.ScheduledAt)); err != nil {
			return fmt.Errorf("create run of job %d: %w", c.JobID, err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE subsync_run SET
    lease_owner = $2, lease_until = `+now+` + $3, worker = $4, state = $5,
    attempts = attempts + 1, updated_at = `+now+`
WHERE job_id = $1 AND state NOT IN ('completed', 'failed', 'cancelled')
    AND (lease_owner = '' OR lease_owner = $2 OR lease_until < `+now+`)`,
			c.JobID, c.Owner, c.TTL.Microseconds(), c.Worker, string(RunRunning))
		if err != nil {
			return fmt.Errorf("claim run of job %d: %w", c.JobID, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("claim run of job %d: %w", c.JobID, err)
		}
		run, err = scanRun(tx.QueryRowContext(ctx, "SELECT "+runColumns+" FROM subsync_run WHERE job_id = $1", c.JobID))
		if err != nil {
			return fmt.Errorf("read run of job %d: %w", c.JobID, err)
		}
		if n == 0 {
			if run.State.Final() {
				return ErrRunFinished
			}
			return ErrLeaseHeld
		}
		return nil
	})
	return run, err
}

// RenewLease extends the caller's lease on a run by ttl from now (database clock).
func (s *Store) RenewLease(ctx context.Context, runID int64, owner string, ttl time.Duration) error {
	now := s.d.nowExpr()
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_run SET lease_until = `+now+` + $3, updated_at = `+now+`
WHERE id = $1 AND lease_owner = $2`, runID, owner, ttl.Microseconds())
	if err != nil {
		return fmt.Errorf("renew lease of run %d: %w", runID, err)
	}
	return fenced(res, runID)
}

func fenced(res sql.Result, runID int64) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("run %d: %w", runID, err)
	}
	if n == 0 {
		return fmt.Errorf("run %d: %w", runID, ErrLeaseLost)
	}
	return nil
}

// Checkpoint is what an acknowledged stretch of a run adds to its state, written atomically.
// Delta fingerprints are saved separately (SaveFingerprints), in far larger batches.
type Checkpoint struct {
	RunID int64
	Owner string
	TTL   time.Duration // the lease is renewed by this much
	// Position is the new source position; every row at or below it is done.
	Position  int64
	BytesDone int64
	// Delta is added to the run's counts.
	Delta   Counts
	Rejects []Reject
	// Warnings are rows sent without a value mapping dropped (see mapping's on_invalid); a
	// row's warnings stand together. They add nothing to the counts.
	Warnings []Reject
	// Roster is what the stretch changes in the sync's roster (nil: nothing), written in the
	// same transaction: a killed run neither loses nor repeats it.
	Roster *RosterChange
	// Acked are the ordinals (each ascending) of batches the service acknowledged above
	// Position, counted in Delta: a resumed run reads them again for their e-mails only (see
	// AckedAbove). The records of batches at or below Position are dropped.
	Acked [][]int64
}

// SetTotals records what is known in advance of a run's size.
func (s *Store) SetTotals(ctx context.Context, runID int64, owner string, totalRows, totalBytes int64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_run SET total_rows = $3, total_bytes = $4
WHERE id = $1 AND lease_owner = $2`, runID, owner, totalRows, totalBytes)
	if err != nil {
		return fmt.Errorf("set totals of run %d: %w", runID, err)
	}
	return fenced(res, runID)
}

// Checkpoint writes cp in one transaction, fenced by the caller's lease. On ErrLeaseLost
// nothing is written. On Postgres its statements go to the server together, one round trip
// (see checkpointPipelined), unless it moves people into the suppression list.
func (s *Store) Checkpoint(ctx context.Context, cp Checkpoint) error {
	if s.d == Postgres && (cp.Roster == nil || len(cp.Roster.Suppress) == 0) {
		return s.checkpointPipelined(ctx, cp)
	}
	return s.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.checkpointUpdate(), checkpointArgs(cp)...)
		if err != nil {
			return fmt.Errorf("checkpoint run %d: %w", cp.RunID, err)
		}
		if err := fenced(res, cp.RunID); err != nil {
			return err
		}
		if err := s.writeCheckpointRecords(ctx, tx, cp); err != nil {
			return err
		}
		if cp.Roster != nil {
			return suppressAll(ctx, tx, cp.Roster.Suppress)
		}
		return nil
	})
}

// checkpointUpdate is the statement of a checkpoint that moves the run's position, adds to
// its counts and renews its lease (arguments: checkpointArgs), fenced by the lease: it
// changes no row when the caller lost it.
func (s *Store) checkpointUpdate() string {
	now := s.d.nowExpr()
	return `UPDATE subsync_run SET
    position = $3, bytes_done = $4,
    rows_read = rows_read + $5, rows_rejected = rows_rejected + $6, rows_duplicate = rows_duplicate + $7,
    rows_suppressed = rows_suppressed + $8, rows_unchanged = rows_unchanged + $9, rows_sent = rows_sent + $10,
    batches = batches + $11, requests = requests + $12, retries = retries + $13,
    lease_until = ` + now + ` + $14, updated_at = ` + now + `, rows_removed = rows_removed + $15,
    rows_unmatched = rows_unmatched + $16, rows_filtered = rows_filtered + $17
WHERE id = $1 AND lease_owner = $2`
}

func checkpointArgs(cp Checkpoint) []any {
	d := cp.Delta
	return []any{cp.RunID, cp.Owner, cp.Position, cp.BytesDone,
		d.Read, d.Rejected, d.Duplicates, d.Suppressed, d.Unchanged, d.Sent, d.Batches, d.Requests, d.Retries,
		cp.TTL.Microseconds(), d.Removed, d.Unmatched, d.Filtered}
}

// writeCheckpointRecords writes what a checkpoint records beside the run's row, once that
// row is fenced: its roster members, its acknowledged batches, its rejects and warnings (not
// its suppressions: see suppressAll).
func (s *Store) writeCheckpointRecords(ctx context.Context, ex execer, cp Checkpoint) error {
	if err := s.writeRoster(ctx, ex, cp.Roster); err != nil {
		return err
	}
	if err := s.writeAcked(ctx, ex, cp); err != nil {
		return err
	}
	if err := insertRejects(ctx, ex, s.d, cp.RunID, "subsync_reject", cp.Rejects); err != nil {
		return err
	}
	return insertRejects(ctx, ex, s.d, cp.RunID, "subsync_warning", cp.Warnings)
}

// Release ends the caller's attempt without finishing the run: state is RunRetrying or
// RunInterrupted, errMsg the reason. The lease is dropped so the next attempt starts at once.
func (s *Store) Release(ctx context.Context, runID int64, owner string, state RunState, errMsg string) error {
	if state.Final() || state == RunRunning {
		return fmt.Errorf("release run %d: state %q is not a pause", runID, state)
	}
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_run SET state = $3, error = $4,
    lease_owner = '', lease_until = 0, updated_at = `+s.d.nowExpr()+`
WHERE id = $1 AND lease_owner = $2`, runID, owner, string(state), errMsg)
	if err != nil {
		return fmt.Errorf("release run %d: %w", runID, err)
	}
	return fenced(res, runID)
}

// Finish records the outcome of a run (a final state) and drops the lease. errMsg is empty on
// success.
func (s *Store) Finish(ctx context.Context, runID int64, owner string, state RunState, errMsg string) error {
	if !state.Final() {
		return fmt.Errorf("finish run %d: state %q is not final", runID, state)
	}
	now := s.d.nowExpr()
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_run SET state = $3, error = $4,
    lease_owner = '', lease_until = 0, updated_at = `+now+`, finished_at = `+now+`
WHERE id = $1 AND lease_owner = $2`, runID, owner, string(state), errMsg)
	if err != nil {
		return fmt.Errorf("finish run %d: %w", runID, err)
	}
	if err := fenced(res, runID); err != nil {
		return err
	}
	// A run that ended short of its last row leaves records no attempt will read.
	if _, err := s.db.ExecContext(ctx, "DELETE FROM subsync_run_acked WHERE run_id = $1", runID); err != nil {
		return fmt.Errorf("finish run %d: %w", runID, err)
	}
	return nil
}

// CancelQueued records a run for a job cancelled before any attempt claimed it, or marks an
// unowned run cancelled. A run owned by a live attempt is left to that attempt.
func (s *Store) CancelQueued(ctx context.Context, c Claim, reason string) error {
	now := s.d.nowExpr()
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO subsync_run
    (job_id, kind, name, list_id, source, state, error, scheduled_at, updated_at, finished_at)
VALUES ($1, $2, $3, $4, $5, 'cancelled', $6, $7, `+now+`, `+now+`)
ON CONFLICT (job_id) DO NOTHING`,
			c.JobID, c.Kind, c.Name, c.ListID, c.Source, reason, micros(c.ScheduledAt)); err != nil {
			return fmt.Errorf("record cancelled job %d: %w", c.JobID, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE subsync_run SET state = 'cancelled', error = $2,
    updated_at = `+now+`, finished_at = `+now+`
WHERE job_id = $1 AND state NOT IN ('completed', 'failed', 'cancelled')
    AND (lease_owner = '' OR lease_until < `+now+`)`, c.JobID, reason); err != nil {
			return fmt.Errorf("cancel run of job %d: %w", c.JobID, err)
		}
		return nil
	})
}

// CloseOrphan records the end of a job's run that no live worker owns (never claimed, or its
// lease expired) when the job ended in the queue without it: st is RunCancelled or RunFailed.
// It reports whether it changed the run.
func (s *Store) CloseOrphan(ctx context.Context, jobID int64, st RunState, reason string) (bool, error) {
	if st != RunCancelled && st != RunFailed {
		return false, fmt.Errorf("close run of job %d: state %q is neither cancelled nor failed", jobID, st)
	}
	now := s.d.nowExpr()
	res, err := s.db.ExecContext(ctx, `UPDATE subsync_run SET state = $2, error = $3, lease_owner = '', lease_until = 0,
    updated_at = `+now+`, finished_at = `+now+`
WHERE job_id = $1 AND state NOT IN ('completed', 'failed', 'cancelled')
    AND (lease_owner = '' OR lease_until < `+now+`)`, jobID, string(st), reason)
	if err != nil {
		return false, fmt.Errorf("close run of job %d: %w", jobID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("close run of job %d: %w", jobID, err)
	}
	return n > 0, nil
}

// ExpiredLeases returns the job ids of runs in RunRunning whose lease has expired on the
// database clock: their worker died without releasing them.
func (s *Store) ExpiredLeases(ctx context.Context) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT job_id FROM subsync_run
WHERE state = 'running' AND lease_owner <> '' AND lease_until < `+s.d.nowExpr()+` ORDER BY job_id`)
	if err != nil {
		return nil, fmt.Errorf("list expired leases: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("list expired leases: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list expired leases: %w", err)
	}
	return ids, nil
}

// Accounted reports whether the run of jobID is held by an unexpired lease or has already
// ended. Either way nobody need take the job over: its worker is alive, or the run is done
// and the queue is about to record the job's end (River completes jobs asynchronously, so a
// job can still show as running for a moment after its run completed).
func (s *Store) Accounted(ctx context.Context, jobID int64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM subsync_run
WHERE job_id = $1 AND ((lease_owner <> '' AND lease_until >= `+s.d.nowExpr()+`)
    OR state IN ($2, $3, $4))`, jobID, string(RunCompleted), string(RunFailed), string(RunCancelled)).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check lease of job %d: %w", jobID, err)
	}
	return n > 0, nil
}

// writeAcked records the batches a checkpoint counts above its position and drops the
// records its position now covers.
func (s *Store) writeAcked(ctx context.Context, tx execer, cp Checkpoint) error {
	for _, ords := range cp.Acked {
		if len(ords) == 0 {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO subsync_run_acked (run_id, max_ord, ords) VALUES ($1, $2, $3)
ON CONFLICT (run_id, max_ord) DO NOTHING`, cp.RunID, ords[len(ords)-1], encodeOrdinals(ords)); err != nil {
			return fmt.Errorf("checkpoint run %d: record acknowledged batch: %w", cp.RunID, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM subsync_run_acked WHERE run_id = $1 AND max_ord <= $2",
		cp.RunID, cp.Position); err != nil {
		return fmt.Errorf("checkpoint run %d: %w", cp.RunID, err)
	}
	return nil
}

// AckedAbove returns, ascending, the ordinals above position of the batches a run's
// checkpoints recorded as acknowledged (Checkpoint.Acked): rows an earlier attempt delivered
// and counted, which the attempt resuming at position must not send again.
func (s *Store) AckedAbove(ctx context.Context, runID, position int64) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT ords FROM subsync_run_acked WHERE run_id = $1 AND max_ord > $2", runID, position)
	if err != nil {
		return nil, fmt.Errorf("read acknowledged batches of run %d: %w", runID, err)
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return nil, fmt.Errorf("read acknowledged batches of run %d: %w", runID, err)
		}
		ords, err := decodeOrdinals(data)
		if err != nil {
			return nil, fmt.Errorf("read acknowledged batches of run %d: %w", runID, err)
		}
		for _, o := range ords {
			if o > position {
				out = append(out, o)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read acknowledged batches of run %d: %w", runID, err)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// encodeOrdinals encodes ascending ordinals as varints: the first, then the differences.
func encodeOrdinals(ords []int64) []byte {
	out := make([]byte, 0, 2*len(ords)+8)
	prev := int64(0)
	for _, o := range ords {
		out = binary.AppendUvarint(out, uint64(o-prev))
		prev = o
	}
	return out
}

func decodeOrdinals(data []byte) ([]int64, error) {
	var out []int64
	prev := int64(0)
	for len(data) > 0 {
		d, n := binary.Uvarint(data)
		if n <= 0 {
			return nil, errors.New("malformed ordinals")
		}
		prev += int64(d)
		out = append(out, prev)
		data = data[n:]
	}
	return out, nil
}
