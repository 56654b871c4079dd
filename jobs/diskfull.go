package jobs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/subsync/subsync/state"
)

// A full disk fails a run at once (it is permanent: retrying cannot help until space is
// freed), with a message naming the disk's path. On SQLite the database itself may then be
// unable to record the run's end: the process that worked the run still knows it, and a Wait
// of that process returns it (lostEnd) instead of following a run the database shows running
// for ever. The run resumes from its checkpoint under a worker started once space is freed.

// hurryStopTimeout bounds the stop of a working session in a hurry: River's own completer may
// be unable to record the jobs' ends (a full disk), and would retry them for as long as it is
// given.
const hurryStopTimeout = 5 * time.Second

// diskFull says which disk is full: a file's write names its file, SQLite's error names
// nothing, so the database's path is added.
func (rt *Runtime) diskFull(err error) error {
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return fmt.Errorf("the disk holding %s is full: free space and run again: %w", pe.Path, err)
	case rt.db.dialect == state.SQLite:
		return fmt.Errorf("the disk holding the queue's database %s is full: free space and run again: %w",
			filepath.Join(rt.cfg.DataDir, SQLiteFile), err)
	default:
		return fmt.Errorf("the disk of the queue's Postgres server is full: free space there and run again: %w", err)
	}
}

// lostEnd is the end of a run this process worked that the database could not record.
type lostEnd struct {
	runID int64
	state state.RunState
	msg   string
	err   error // why it could not be recorded
}

// loseEnd remembers the end of a run the database could not record and wakes the Waits.
func (rt *Runtime) loseEnd(jobID, runID int64, st state.RunState, msg string, err error) {
	rt.mu.Lock()
	if rt.lost == nil {
		rt.lost = map[int64]lostEnd{}
	}
	rt.lost[jobID] = lostEnd{runID: runID, state: st, msg: msg, err: err}
	rt.mu.Unlock()
	rt.signalRunEnded()
}

// lostEnd returns the error Wait returns for a job whose run's end this process could not
// record, or nil.
func (rt *Runtime) lostEnd(jobID int64) error {
	rt.mu.Lock()
	l, ok := rt.lost[jobID]
	rt.mu.Unlock()
	if !ok {
		return nil
	}
	unrecorded := fmt.Errorf("the database could not record its end: %w", l.err)
	switch l.state {
	case state.RunCompleted:
		return fmt.Errorf("run %d (job %d) completed, but %w", l.runID, jobID, unrecorded)
	case state.RunCancelled:
		return fmt.Errorf("run %d (job %d): %w: %s; %w", l.runID, jobID, ErrRunCancelled, l.msg, unrecorded)
	default:
		return fmt.Errorf("run %d (job %d): %w: %s; %w", l.runID, jobID, ErrRunFailed, l.msg, unrecorded)
	}
}

// stopQueue stops the River client: gracefully, River cancelling the jobs' contexts after its
// soft stop timeout and the extra time letting them write their last checkpoint and return;
// in a hurry, the jobs' contexts cancelled at once and hurryStopTimeout given.
func (rt *Runtime) stopQueue(base context.Context, hurry bool) error {
	if hurry {
		ctx, cancel := context.WithTimeout(base, hurryStopTimeout)
		defer cancel()
		return rt.q.StopAndCancel(ctx)
	}
	ctx, cancel := context.WithTimeout(base, rt.cfg.ShutdownTimeout+10*time.Second)
	defer cancel()
	return rt.q.Stop(ctx)
}

// stoppedBefore reports whether the River client may start again: a stop that returned before
// the client had stopped (its time ran out: a full disk keeps River's completer retrying)
// leaves it stopping, and River's Start on a client not yet stopped does nothing. Called with
// rt.mu held.
func (rt *Runtime) stoppedBefore() error {
	if rt.queueStopping == nil {
		return nil
	}
	select {
	case <-rt.queueStopping:
		rt.queueStopping = nil
		return nil
	default:
		return errors.New("the job queue of this process is still stopping")
	}
}
