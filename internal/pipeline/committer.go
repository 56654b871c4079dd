package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

const (
	// maxPendingCommits bounds checkpoints queued for the writer.
	maxPendingCommits = 32
	// commitTimeout bounds one checkpoint write. Checkpoints are written even while the job
	// is being cancelled: they record batches the service has already acknowledged.
	commitTimeout = 30 * time.Second
)

// The committer is the last stage: it turns what is done into checkpoints, in order. A
// checkpoint is the highest ordinal below which every row is done (rejected, filtered, or in
// a batch the service acknowledged), and carries the counts, rejects and fingerprints of the
// outcomes it newly covers and of the batches acknowledged since the last (see countBatch):
// every row is counted by exactly one checkpoint. Its writer goroutine writes checkpoints
// queued together in one transaction, and saves the fingerprints of acknowledged rows every
// FingerprintFlush rows and once the source is read; the engine writes a checkpoint itself
// when it waits for the window and the writer is idle (see advance).
type committer struct {
	store    Store
	log      *slog.Logger
	fps      *state.FingerprintSet
	fpFlush  atomic.Int64 // the fingerprints pending that make the writer save them (see saveEarly)
	fpEvery  int64        // Config.FingerprintFlush
	runID    int64
	owner    string
	ttl      time.Duration
	onCommit func(state.Counts)
	roster   *state.Roster // a sync's: acknowledged members are recorded in it
	listID   int64
	release  func([]*batch) // the batcher takes back batches counted
	fail     func(error)    // the batcher stops on a failed checkpoint

	pos        int64        // position of the last checkpoint queued
	outcomes   []outcome    // rows not sent (or counted) awaiting the checkpoint, in ordinal order
	uncounted  state.Counts // requests of failed batches, for the next checkpoint
	sheet      string
	commits    chan *commitUnit
	done       chan *commitUnit // written, back to the engine
	pending    int              // queued, not yet back
	err        error            // a checkpoint failed (lease lost): nothing more is checkpointed
	saveFailed bool             // saving fingerprints failed: not tried again this run
	saving     atomic.Bool      // the writer saves fingerprints, writing checkpoints between its steps
	byEngine   int              // checkpoints the engine wrote itself (for the run's timings)
	byWriter   atomic.Int64     // transactions of checkpoints the writer wrote
	stop       chan struct{}    // closed when the run ends: the writer stops handing back
	result     chan error
}

type commitUnit struct {
	cp      state.Checkpoint
	fps     []state.Fingerprint
	batches []*batch
	err     error
}

func newCommitter(cfg Config) *committer {
	c := &committer{store: cfg.Store, log: cfg.Logger, fps: cfg.Fingerprints,
		runID: cfg.RunID, owner: cfg.Owner, ttl: cfg.LeaseTTL, onCommit: cfg.OnCommit, roster: cfg.Roster, listID: cfg.ListID,
		commits: make(chan *commitUnit, 2*maxPendingCommits), done: make(chan *commitUnit, 2*maxPendingCommits),
		stop: make(chan struct{}), result: make(chan error, 1)}
	c.fpEvery = int64(cfg.FingerprintFlush)
	c.fpFlush.Store(c.fpEvery)
	return c
}

// start starts the writer, for a run resuming at pos.
func (c *committer) start(ctx context.Context, pos int64) {
	c.pos = pos
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

func (c *committer) setSheet(s string) {
	if c.sheet == "" {
		c.sheet = s
	}
}

// await queues the outcomes of a chunk (in ordinal order) for the checkpoints.
func (c *committer) await(outs []outcome) { c.outcomes = append(c.outcomes, outs...) }

// uncount notes the requests of a failed batch for the next checkpoint; a request the
// service answered with a wait (Retry-After) is repeated once the job has waited: a retry.
func (c *committer) uncount(b *batch) {
	c.uncounted.Requests += int64(b.res.Requests)
	c.uncounted.Retries += int64(b.res.Retries)
	if ae := (*sink.APIError)(nil); errors.As(b.err, &ae) && ae.RetryAfter > 0 {
		c.uncounted.Retries++
	}
}

// advance queues a checkpoint at w for everything newly done: the outcomes at or below w and
// the acknowledged batches in window (see countBatch). It waits while maxPendingCommits are
// queued.
// With now (the caller has nothing else to do until a checkpoint frees a slot of the window)
// and the writer idle, it writes the checkpoint itself: handing it to the writer and taking
// it back costs two goroutine switches, which on a busy machine take longer than the write.
func (c *committer) advance(ctx context.Context, w, bytes int64, window []*batch, now bool) {
	if c.err != nil || (w <= c.pos && c.uncounted == (state.Counts{}) && !slices.ContainsFunc(window, ackedUncounted)) {
		return
	}
	w = max(w, c.pos)
	u := &commitUnit{cp: state.Checkpoint{RunID: c.runID, Owner: c.owner, TTL: c.ttl, Position: w, BytesDone: bytes}}
	d := &u.cp.Delta
	*d, c.uncounted = c.uncounted, state.Counts{}
	d.Read = w - c.pos
	for _, b := range window {
		if ackedUncounted(b) {
			c.countBatch(u, b, w)
		}
	}
	n := 0
	for n < len(c.outcomes) && c.outcomes[n].ord <= w {
		o := c.outcomes[n]
		*d = d.Add(o.counts())
		if o.refresh != nil {
			u.fps = append(u.fps, *o.refresh)
		}
		switch {
		case o.kind == outWarning:
			u.cp.Warnings = append(u.cp.Warnings, *o.reject)
		case o.reject != nil:
			u.cp.Rejects = append(u.cp.Rejects, *o.reject)
		}
		if o.member != nil {
			c.rosterChange(u).Add = append(c.rosterChange(u).Add, *o.member)
		}
		n++
	}
	if n < len(c.outcomes) && c.outcomes[n].straddles(w) {
		head := c.outcomes[n].split(w) // a run of unchanged rows, partly at or below w
		*d = d.Add(head.counts())
	}
	c.outcomes = append(c.outcomes[:0], c.outcomes[n:]...)
	c.pos = w
	for c.pending >= maxPendingCommits {
		select {
		case cu := <-c.done:
			c.written(cu)
		case <-ctx.Done():
			return
		}
	}
	c.pending++
	if now && c.pending == 1 && !c.saving.Load() && int64(c.fps.Pending()+len(u.fps)) < c.fpFlush.Load() {
		// Nothing is queued or being written, and no fingerprints are being saved: the
		// writer waits for the next unit, and every unit it wrote was taken back (written)
		// on this goroutine, so this goroutine may write and touch the fingerprints
		// meanwhile. (The writer sets saving before it hands back the units whose
		// fingerprints made it save.) A unit that brings the fingerprints pending to
		// FingerprintFlush goes to the writer, which saves them.
		c.byEngine++
		c.commit(ctx, []*commitUnit{u})
		c.written(u)
		return
	}
	c.commits <- u
}

// ackedUncounted reports whether b is acknowledged and not yet counted by a checkpoint.
func ackedUncounted(b *batch) bool { return b.acked && !b.committed }

// countBatch adds an acknowledged batch to u, whole: the batch, its requests, its rows sent
// (with their fingerprints and roster members) and refused (rejects). The rows above the
// checkpoint w (a batch acknowledged before an earlier one, or one of a status group whose
// rows the checkpoint has not all passed) are recorded in u as acknowledged (Checkpoint.Acked):
// an attempt resuming from the checkpoint reads them again for their e-mails only, and
// neither sends nor counts them again. So the batch's slot in the window is free as soon as
// this checkpoint is written, whatever the batches before it do, and a killed worker re-sends
// at most the batches in flight: those not yet acknowledged.
func (c *committer) countBatch(u *commitUnit, b *batch, w int64) {
	if k, _ := slices.BinarySearch(b.ords, w+1); k < len(b.ords) { // ords ascend
		u.cp.Acked = append(u.cp.Acked, slices.Clone(b.ords[k:])) // b's arrays are reused once released
	}
	d := &u.cp.Delta
	d.Batches++
	d.Requests += int64(b.res.Requests)
	d.Retries += int64(b.res.Retries)
	rejects, r := b.res.Rejects, 0 // ordered by Index
	for i := range b.ords {
		for r < len(rejects) && rejects[r].Index < i {
			r++
		}
		if r < len(rejects) && rejects[r].Index == i {
			rr := rejects[r]
			d.Rejected++
			u.cp.Rejects = append(u.cp.Rejects, rejectRecord(&mapping.Reject{Ordinal: b.ords[i], Line: b.lines[i],
				Sheet: c.sheet, Value: rr.Email, Code: mapping.CodeRefused, Message: rr.Reason}, state.EncodeRow(b.vals[i])))
			continue
		}
		d.Sent++
		u.fps = append(u.fps, state.Fingerprint{Email: b.emails[i], Payload: b.payloads[i], Source: b.sources[i]})
		if len(b.members) > i && b.members[i] != 0 {
			c.addMember(u, b, i)
		}
	}
	b.committed, b.coveredAt = true, time.Now()
	u.batches = append(u.batches, b)
}

// rosterChange is the roster change of u, made on first use.
func (c *committer) rosterChange(u *commitUnit) *state.RosterChange {
	if u.cp.Roster == nil {
		u.cp.Roster = &state.RosterChange{Sync: c.roster.Sync(), ListID: c.listID}
	}
	return u.cp.Roster
}

// addMember records sent row i of b in the roster, and the status it carried over from the
// address its key had (see filter.moveConsent) in the list's suppression list.
func (c *committer) addMember(u *commitUnit, b *batch, i int) {
	rc := c.rosterChange(u)
	fl, r := b.members[i], &b.rows[i]
	m := state.Member{Email: strings.Clone(r.Email), Key: strings.Clone(r.ExternalID), Moved: fl&memberMoved != 0}
	rc.Add = append(rc.Add, m)
	if fl&memberCarry != 0 {
		rc.Suppress = append(rc.Suppress, state.Suppression{ListID: c.listID, Email: m.Email, Status: b.key.status,
			ChangedAt: time.Now()})
	}
}

// written takes a checkpoint back from the writer.
func (c *committer) written(u *commitUnit) {
	c.pending--
	if u.err != nil {
		c.fail(u.err)
		if c.err == nil {
			c.err = u.err
		}
		return
	}
	c.release(u.batches)
	if c.onCommit != nil {
		c.onCommit(u.cp.Delta)
	}
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
			c.fpFlush.Store(c.fpEvery) // after an early save, the next at the usual count
		}
		c.handBack(units)
		if save {
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
	var units []*commitUnit
more:
	for len(units) < maxPendingCommits {
		select {
		case u, ok := <-c.commits:
			if !ok {
				break more // the run ends: write what is left, the loop in write stops
			}
			units = append(units, u)
		default:
			break more
		}
	}
	if len(units) > 0 {
		c.byWriter.Add(1)
		c.commit(ctx, units)
		c.handBack(units)
	}
}

// commit writes consecutive checkpoints in one transaction, records the units' outcome and
// adds their fingerprints (the writer saves them once FingerprintFlush are pending).
func (c *committer) commit(ctx context.Context, units []*commitUnit) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	err := c.store.Checkpoint(wctx, mergeCheckpoints(units))
	cancel()
	for _, u := range units {
		u.err = err
		if err == nil {
			for _, f := range u.fps {
				c.fps.Add(f)
			}
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
