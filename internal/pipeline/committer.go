package pipeline

import (
	"context"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/subsync/subsync/state"
)

const (
	// maxPendingCommits bounds checkpoints queued for the writer.
	maxPendingCommits = 32
	// commitTimeout bounds one checkpoint write. Checkpoints are written even while the job
	// is being cancelled: they record batches the service has already acknowledged.
	commitTimeout = 30 * time.Second
)

// The committer is the last stage: it writes the checkpoints the ledger counts, in order,
// and the delta fingerprints. It is handed plain values (commitUnit) and hands them back
// written (done); it never sees a batch. Its writer goroutine writes checkpoints queued
// together in one transaction, and saves the fingerprints of acknowledged rows every
// FingerprintFlush rows and once the source is read; the engine writes a checkpoint itself
// when it waits for the window and the writer is idle (see submit).
type committer struct {
	store    Store
	log      *slog.Logger
	fps      *state.FingerprintSet
	fpFlush  atomic.Int64 // the fingerprints pending that make the writer save them (see saveEarly)
	fpBase   int64        // Config.FingerprintFlush
	fpEvery  int64        // the fingerprints pending that make the writer save them: see growFlush
	fpSaved  int64        // the fingerprints the run's saves took so far
	commits  chan *commitUnit
	done     chan *commitUnit // written, back to the engine
	byEngine int              // checkpoints the engine wrote itself (for the run's timings)
	byWriter atomic.Int64     // transactions of checkpoints the writer wrote
	// saveFailed: saving fingerprints failed: not tried again this run.
	saveFailed bool
	saving     atomic.Bool // the writer saves fingerprints, writing checkpoints between its steps
	// beside: the store saves fingerprints beside checkpoint writes (see savesBeside): the
	// writer goes on writing checkpoints while a goroutine of its own saves.
	beside bool
	// held are the fingerprints of the checkpoints written during a save beside, added to
	// fps once it ended (the save reads what is pending meanwhile).
	held   []state.Fingerprint
	hold   bool          // a save beside is under way: commit adds to held
	stop   chan struct{} // closed when the run ends: the writer stops handing back
	result chan error
}

func newCommitter(cfg Config) *committer {
	c := &committer{store: cfg.Store, log: cfg.Logger, fps: cfg.Fingerprints,
		commits: make(chan *commitUnit, 2*maxPendingCommits), done: make(chan *commitUnit, 2*maxPendingCommits),
		stop: make(chan struct{}), result: make(chan error, 1)}
	c.fpBase = int64(cfg.FingerprintFlush)
	c.fpEvery = c.fpBase
	c.fpFlush.Store(c.fpEvery)
	if b, ok := cfg.Store.(savesBeside); ok {
		c.beside = b.SavesBeside()
	}
	return c
}

// savesBeside is a Store that can save fingerprints while checkpoints are written (on other
// connections, into other tables): Postgres. SQLite has one writer: a checkpoint would wait
// for the save's transaction anyway.
type savesBeside interface{ SavesBeside() bool }

// start starts the writer.
func (c *committer) start(ctx context.Context) {
	go func() { c.result <- c.write(ctx) }()
}

// saveEarly makes the writer save the fingerprints pending with the next checkpoint it
// writes: the whole source is read, and the last batches are in flight. The save then
// overlaps their round trips instead of following the last of them.
func (c *committer) saveEarly() { c.fpFlush.Store(1) }

// close stops the writer once it wrote what is queued.
func (c *committer) close() error {
	close(c.stop)
	close(c.commits)
	return <-c.result
}

// submit hands a checkpoint to the writer, which hands it back on done once written; or,
// when idle (nothing is queued or being written: the caller has nothing else to do until a
// checkpoint frees a slot of the window) and no fingerprints are being saved, writes it
// itself and reports true: handing it to the writer and taking it back costs two goroutine
// switches, which on a busy machine take longer than the write. At most maxPendingCommits may
// be queued.
func (c *committer) submit(ctx context.Context, u *commitUnit, idle bool) (wrote bool) {
	if idle && !c.saving.Load() && int64(c.fps.Pending()+len(u.fps)) < c.fpFlush.Load() {
		// The writer waits for the next unit, and every unit it wrote was taken back on the
		// caller's goroutine, so that goroutine may write and touch the fingerprints
		// meanwhile. (The writer sets saving before it hands back the units whose
		// fingerprints made it save.) A unit that brings the fingerprints pending to
		// FingerprintFlush goes to the writer, which saves them.
		c.byEngine++
		c.commit(ctx, []*commitUnit{u})
		return true
	}
	c.commits <- u
	return false
}

// write is the writer goroutine: it writes the checkpoints queued, several together when
// they queued meanwhile (one transaction, the same result as one after the other).
func (c *committer) write(ctx context.Context) error {
	var units []*commitUnit
	for u := range c.commits {
		units = append(units[:0], u)
	more:
		for len(units) < maxPendingCommits {
			select {
			case next, ok := <-c.commits:
				if !ok {
					break more
				}
				units = append(units, next)
			default:
				break more
			}
		}
		c.byWriter.Add(1)
		c.commit(ctx, units)
		save := units[len(units)-1].err == nil && int64(c.fps.Pending()) >= c.fpFlush.Load() && !c.saveFailed
		if save {
			c.saving.Store(true)
			c.fpSaved += int64(c.fps.Pending())
			c.fpEvery = growFlush(c.fpBase, c.fpSaved)
			c.fpFlush.Store(c.fpEvery) // after an early save, the next at the usual count
		}
		c.handBack(units)
		if save && c.beside {
			c.saveBeside(ctx)
			c.saving.Store(false)
		} else if save {
			// The checkpoints queued meanwhile are written between the save's steps: the
			// window's slots do not wait for the whole save. After each step the writer
			// yields: on a busy core the engine, readied by the checkpoints handed back,
			// would otherwise wait for the whole save (the steps are CPU work; nothing in
			// them blocks).
			c.save(ctx, func() {
				c.drain(ctx)
				runtime.Gosched()
			})
			c.saving.Store(false)
		}
	}
	c.save(ctx, nil)
	return nil
}

// growFlush is how many fingerprints pending make the next save, once a run's saves took
// saved: FingerprintFlush (base), or an eighth of what was saved if more, up to one and a half
// times base. Each save gives the buckets a part, and the merges that keep a bucket at eight
// parts rewrite more the larger the list: saving less often as the list grows keeps their
// cost a row closer at ten million rows to what it is at a million (a run of up to 8 × base
// rows saves as before), while what a run holds stays bounded (the fingerprints held during
// a save beside stay bounded by base).
func growFlush(base, saved int64) int64 {
	return min(max(base, saved/8), base+base/2)
}

// saveBeside saves the fingerprints pending on a goroutine of its own while the writer goes
// on writing the checkpoints queued, as they come: the window's slots wait for none of the
// save's steps, each a few milliseconds of the server's time. The fingerprints of the
// checkpoints written meanwhile are held, and added once the save ended (the next save takes
// them); once FingerprintFlush are held, the checkpoints queued wait for the save to end.
// The engine writes no checkpoint itself during the save (saving is set), so fps and held are
// the writer's and the saver's alone.
func (c *committer) saveBeside(ctx context.Context) {
	done := make(chan struct{})
	c.hold = true
	go func() {
		defer close(done)
		c.save(ctx, func() {})
	}()
	commits := c.commits
	for commits != nil {
		select {
		case <-done:
			commits = nil
		case u, ok := <-commits:
			if !ok {
				commits = nil // the run ends: the loop in write stops once the save is done
				continue
			}
			c.writeBack(ctx, append([]*commitUnit{u}, c.queued()...))
			if int64(len(c.held)) >= c.fpBase {
				// FingerprintFlush held: the rest waits for the save, so that what the run
				// holds does not grow with the time the save takes (nor with the list, as
				// what a save takes does: see growFlush).
				commits = nil
			}
		}
	}
	<-done
	c.hold = false
	c.fps.AddBatch(c.held)
	c.held = c.held[:0]
}

// handBack gives written units back to the engine.
func (c *committer) handBack(units []*commitUnit) {
	for _, u := range units {
		select {
		case c.done <- u:
		case <-c.stop:
		}
	}
}

// drain writes the checkpoints queued, if any, and hands them back (between the steps of a
// save, on the writer goroutine).
func (c *committer) drain(ctx context.Context) {
	if units := c.queued(); len(units) > 0 {
		c.writeBack(ctx, units)
	}
}

// writeBack writes units, queued together, in one transaction and hands them back (on the
// writer goroutine).
func (c *committer) writeBack(ctx context.Context, units []*commitUnit) {
	c.byWriter.Add(1)
	c.commit(ctx, units)
	c.handBack(units)
}

// queued takes the checkpoints queued, up to maxPendingCommits, without waiting. If the run
// ends (commits is closed), it takes what is left, and the loop in write stops.
func (c *committer) queued() []*commitUnit {
	var units []*commitUnit
	for len(units) < maxPendingCommits {
		select {
		case u, ok := <-c.commits:
			if !ok {
				return units
			}
			units = append(units, u)
		default:
			return units
		}
	}
	return units
}

// commit writes consecutive checkpoints in one transaction, records the units' outcome and
// adds their fingerprints (the writer saves them once FingerprintFlush are pending).
func (c *committer) commit(ctx context.Context, units []*commitUnit) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	err := c.store.Checkpoint(wctx, mergeCheckpoints(units))
	cancel()
	for _, u := range units {
		u.err = err
		switch {
		case err != nil:
		case c.hold:
			c.held = append(c.held, u.fps...)
		default:
			c.fps.AddBatch(u.fps)
		}
	}
}

// save saves the fingerprints pending, calling between (unless nil) between its steps.
func (c *committer) save(ctx context.Context, between func()) {
	if c.fps.Pending() == 0 || c.saveFailed {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	if err := c.store.SaveFingerprintsStepped(wctx, c.fps, between); err != nil {
		// Not fatal: a missing fingerprint only makes the next sync send the row again.
		c.log.WarnContext(ctx, "could not save delta fingerprints", slog.Any("error", err))
		c.saveFailed = true
	}
}

// mergeCheckpoints combines consecutive checkpoints into one.
func mergeCheckpoints(units []*commitUnit) state.Checkpoint {
	if len(units) == 1 {
		return units[0].cp
	}
	last := units[len(units)-1].cp
	cp := state.Checkpoint{RunID: last.RunID, Owner: last.Owner, TTL: last.TTL, Position: last.Position,
		BytesDone: last.BytesDone}
	for _, u := range units {
		cp.Delta = cp.Delta.Add(u.cp.Delta)
		cp.Rejects = append(cp.Rejects, u.cp.Rejects...)
		cp.Warnings = append(cp.Warnings, u.cp.Warnings...)
		cp.Acked = append(cp.Acked, u.cp.Acked...)
		if r := u.cp.Roster; r != nil {
			if cp.Roster == nil {
				cp.Roster = &state.RosterChange{Sync: r.Sync, ListID: r.ListID}
			}
			cp.Roster.Add = append(cp.Roster.Add, r.Add...)
			cp.Roster.Suppress = append(cp.Roster.Suppress, r.Suppress...)
		}
	}
	return cp
}
