package pipeline

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// batchState is where a batch is between its request and its reuse. It only moves forward:
//
//	sent ──▶ answered ──▶ counted ──▶ written ──▶ free
//
// A batch whose request failed stays answered (with its error): no checkpoint passes it,
// and the next attempt sends it again.
type batchState uint8

const (
	// sent: the request is under way. The batch holds a slot of the window, and the
	// checkpoint stays below its first row.
	sent batchState = iota + 1
	// answered: the service acknowledged the batch (or the request failed: err is set).
	answered
	// counted: a checkpoint queued for the committer counts it (unit), whole.
	counted
	// written: that checkpoint is written; its slot of the window is free.
	written
	// free: handed back to the batcher, whose arrays it reuses for new rows.
	free
)

// The ledger keeps the books of a run: it owns every batch from sent to free, the rows not
// sent (their outcomes) until a checkpoint counts them, the checkpoint's position, and the
// run's first error. It says when a batch may be sent (room), and turns what is done into
// checkpoints (count): plain values for the committer, copied out of the batches, which the
// ledger frees once the committer hands the checkpoint back written. It runs on the engine's
// goroutine and starts none.
type ledger struct {
	runID  int64
	owner  string
	ttl    time.Duration
	roster *state.Roster // a sync's: acknowledged members are recorded in it
	listID int64
	size   int // the window's size: batches sent and not yet written

	window     []*batch     // sent, not yet written, in send order
	unanswered int          // batches of the window sent and not yet answered
	pending    int          // checkpoints handed to the committer, not yet back
	pos        int64        // position of the last checkpoint counted
	outcomes   []outcome    // rows not sent (or counted) awaiting the checkpoint, in ordinal order
	uncounted  state.Counts // requests of failed batches, for the next checkpoint
	sheet      string
	err        error // the first failure: reading stops, what is in flight finishes
	stopped    bool  // a checkpoint failed (lease lost): nothing more is counted
	freed      []*batch
	slots      slotTimes
}

// slotTimes is where the window's slots spent their time, summed over the batches
// written: a slot is taken when its batch is sent and freed when the checkpoint that counts
// it is written.
type slotTimes struct {
	// Sending: sent until answered.
	Sending time.Duration
	// WaitingToBeCounted: acknowledged until the engine counted it in a checkpoint.
	WaitingToBeCounted time.Duration
	// WaitingForCheckpoint: counted until that checkpoint was written and taken back.
	WaitingForCheckpoint time.Duration
}

// commitUnit is one checkpoint as the committer writes it: plain values, nothing of a batch.
type commitUnit struct {
	cp  state.Checkpoint
	fps []state.Fingerprint // the fingerprints of the rows it counts, added once it is written
	err error               // set by the committer: the write failed
}

func newLedger(cfg Config) *ledger {
	return &ledger{runID: cfg.RunID, owner: cfg.Owner, ttl: cfg.LeaseTTL, roster: cfg.Roster, listID: cfg.ListID,
		size: cfg.Window}
}

// start sets the position a run resumes from.
func (l *ledger) start(pos int64) { l.pos = pos }

// fail records the run's first failure.
func (l *ledger) fail(err error) {
	if l.err == nil {
		l.err = err
	}
}

// busy reports whether a batch awaits its answer or a checkpoint its write.
func (l *ledger) busy() bool { return l.unanswered > 0 || l.pending > 0 }

// setSheet notes the worksheet of the rows (the first seen), for the rejects of refused rows.
func (l *ledger) setSheet(s string) {
	if l.sheet == "" {
		l.sheet = s
	}
}

// await queues the outcomes of a chunk (in ordinal order) for the checkpoints.
func (l *ledger) await(outs []outcome) { l.outcomes = append(l.outcomes, outs...) }

// room reports whether b may be sent now: the window has room and no e-mail of b is in a sent
// batch not yet answered (conflict), so that the last row for an e-mail wins. A window full of
// acknowledged batches, with no checkpoint pending, whose checkpoint waits for rows not yet
// sent, has room: sending is the only way forward.
func (l *ledger) room(b *batch) (ok, conflict bool) {
	if l.conflict(b) {
		return false, true
	}
	return len(l.window) < l.size || l.unanswered == 0 && l.pending == 0, false
}

// conflict reports whether a row of b has its e-mail in a sent batch not yet answered. Only
// a row whose e-mail came earlier in the run can: most batches have none, and are not looked
// at row by row.
func (l *ledger) conflict(b *batch) bool {
	if len(b.dupEmails) == 0 {
		return false
	}
	for _, s := range l.window {
		if s.state != sent {
			continue
		}
		if s.emailSet == nil {
			s.emailSet = make(map[uint64]struct{}, len(s.emails))
			for _, e := range s.emails {
				s.emailSet[e] = struct{}{}
			}
		}
		for _, e := range b.dupEmails {
			if _, ok := s.emailSet[e]; ok {
				return true
			}
		}
	}
	return false
}

// sent takes a batch whose request starts.
func (l *ledger) sent(b *batch) {
	b.state, b.sentAt = sent, time.Now()
	l.window = append(l.window, b)
	l.unanswered++
}

// answered takes a sent batch's answer (b.res, b.err); it reports whether the service
// acknowledged it. A failed batch stays in the window unacknowledged: the checkpoint never
// passes it, and the next attempt sends it again. Its requests are counted all the same, by
// the next checkpoint; a request the service answered with a wait (Retry-After) is repeated
// once the job has waited: a retry.
func (l *ledger) answered(b *batch) bool {
	l.unanswered--
	b.state, b.ackedAt = answered, time.Now()
	if b.err == nil {
		return true
	}
	l.fail(b.err)
	l.uncounted.Requests += int64(b.res.Requests)
	l.uncounted.Retries += int64(b.res.Retries)
	if ae := (*sink.APIError)(nil); errors.As(b.err, &ae) && ae.RetryAfter > 0 {
		l.uncounted.Retries++
	}
	return false
}

// acked reports whether b is acknowledged and not yet counted by a checkpoint.
func acked(b *batch) bool { return b.state == answered && b.err == nil }

// position is the highest ordinal below which every row is done, given the last row read and
// the first row the engine holds that is in no sent batch (0: none).
func (l *ledger) position(lastRead, held int64) int64 {
	w := lastRead
	if held > 0 {
		w = min(w, held-1)
	}
	for _, b := range l.window {
		if b.state == sent || b.state == answered && b.err != nil {
			w = min(w, b.minOrd-1)
		}
	}
	return w
}

// count returns the checkpoint of everything newly done, or nil when there is nothing new
// (or a checkpoint failed): the outcomes at or below the position (see position) and the
// acknowledged batches of the window, counted whole (see countBatch); bytes is how much of
// the source was read. The checkpoint is the caller's to hand to the committer (queued).
func (l *ledger) count(lastRead, held, bytes int64) *commitUnit {
	w := l.position(lastRead, held)
	if l.stopped || w <= l.pos && l.uncounted == (state.Counts{}) && !slices.ContainsFunc(l.window, acked) {
		return nil
	}
	w = max(w, l.pos)
	u := &commitUnit{cp: state.Checkpoint{RunID: l.runID, Owner: l.owner, TTL: l.ttl, Position: w, BytesDone: bytes}}
	d := &u.cp.Delta
	*d, l.uncounted = l.uncounted, state.Counts{}
	d.Read = w - l.pos
	for _, b := range l.window {
		if acked(b) {
			l.countBatch(u, b, w)
		}
	}
	l.countOutcomes(u, w)
	l.pos = w
	return u
}

// countOutcomes adds to u the outcomes at or below w, and those of the rows above w that u
// counts as acknowledged (Checkpoint.Acked): a resumed attempt reads those rows again for
// their e-mails only, so their outcomes (a duplicate sent, a value dropped) are counted now,
// with their batch, or never.
func (l *ledger) countOutcomes(u *commitUnit, w int64) {
	d := &u.cp.Delta
	n := 0
	for n < len(l.outcomes) && l.outcomes[n].ord <= w {
		l.countOutcome(u, l.outcomes[n])
		n++
	}
	if n < len(l.outcomes) && l.outcomes[n].straddles(w) {
		head := l.outcomes[n].split(w) // a run of unchanged rows, partly at or below w
		*d = d.Add(head.counts())
	}
	l.outcomes = append(l.outcomes[:0], l.outcomes[n:]...)
	if len(u.cp.Acked) == 0 || len(l.outcomes) == 0 {
		return
	}
	acked := map[int64]bool{}
	for _, ords := range u.cp.Acked {
		for _, o := range ords {
			acked[o] = true
		}
	}
	l.outcomes = slices.DeleteFunc(l.outcomes, func(o outcome) bool {
		if o.run == 0 && acked[o.ord] {
			l.countOutcome(u, o)
			return true
		}
		return false
	})
}

// countOutcome adds one outcome to u: its counts, its fingerprint refresh, its reject or
// warning, its roster member.
func (l *ledger) countOutcome(u *commitUnit, o outcome) {
	d := &u.cp.Delta
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
		l.rosterChange(u).Add = append(l.rosterChange(u).Add, *o.member)
	}
}

// countBatch adds an acknowledged batch to u, whole: the batch, its requests, its rows sent
// (with their fingerprints and roster members) and refused (rejects), each copied out of the
// batch. The rows above the checkpoint w (a batch acknowledged before an earlier one, or one
// of a status group whose rows the checkpoint has not all passed) are recorded in u as
// acknowledged (Checkpoint.Acked): an attempt resuming from the checkpoint reads them again
// for their e-mails only, and neither sends nor counts them again. So the batch's slot in the
// window is free as soon as this checkpoint is written, whatever the batches before it do,
// and a killed worker re-sends at most the batches in flight: those not yet acknowledged.
func (l *ledger) countBatch(u *commitUnit, b *batch, w int64) {
	if k, _ := slices.BinarySearch(b.ords, w+1); k < len(b.ords) { // ords ascend
		u.cp.Acked = append(u.cp.Acked, slices.Clone(b.ords[k:])) // b's arrays are reused once freed
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
			d.Rejected++
			u.cp.Rejects = append(u.cp.Rejects, refusedReject(b, i, rejects[r], l.sheet))
			continue
		}
		d.Sent++
		u.fps = append(u.fps, state.Fingerprint{Email: b.emails[i], Payload: b.payloads[i], Source: b.sources[i]})
		if len(b.members) > i && b.members[i] != 0 {
			l.addMember(u, b, i)
		}
	}
	b.state, b.unit, b.countAt = counted, u, time.Now()
}

// refusedReject is the reject of row i of b, which the service refused.
func refusedReject(b *batch, i int, rr sink.RowReject, sheet string) state.Reject {
	return rejectRecord(&mapping.Reject{Ordinal: b.ords[i], Line: b.lines[i], Sheet: sheet, Value: rr.Email,
		Code: mapping.CodeRefused, Message: rr.Reason}, state.EncodeRow(b.vals[i]))
}

// rosterChange is the roster change of u, made on first use.
func (l *ledger) rosterChange(u *commitUnit) *state.RosterChange {
	if u.cp.Roster == nil {
		u.cp.Roster = &state.RosterChange{Sync: l.roster.Sync(), ListID: l.listID}
	}
	return u.cp.Roster
}

// addMember records sent row i of b in the roster, and the status it carried over from the
// address its key had (see filter.moveConsent) in the list's suppression list.
func (l *ledger) addMember(u *commitUnit, b *batch, i int) {
	rc := l.rosterChange(u)
	fl, r := b.members[i], &b.rows[i]
	m := state.Member{Email: strings.Clone(r.Email), Key: strings.Clone(r.ExternalID), Moved: fl&memberMoved != 0}
	rc.Add = append(rc.Add, m)
	if fl&memberCarry != 0 {
		rc.Suppress = append(rc.Suppress, state.Suppression{ListID: l.listID, Email: m.Email, Status: b.key.status,
			ChangedAt: time.Now()})
	}
}

// queued notes a checkpoint handed to the committer.
func (l *ledger) queued() { l.pending++ }

// written takes a checkpoint back from the committer. Written, it frees the batches it
// counted and returns them, for the batcher to reuse (valid until the next call), and ok; a
// failed one is the run's failure, and nothing more is counted.
func (l *ledger) written(u *commitUnit) (freed []*batch, ok bool) {
	l.pending--
	if u.err != nil {
		l.fail(u.err)
		l.stopped = true
		return nil, false
	}
	now := time.Now()
	l.freed = l.freed[:0]
	l.window = slices.DeleteFunc(l.window, func(b *batch) bool {
		if b.unit != u {
			return false
		}
		b.state = written
		l.slots.Sending += b.ackedAt.Sub(b.sentAt)
		l.slots.WaitingToBeCounted += b.countAt.Sub(b.ackedAt)
		l.slots.WaitingForCheckpoint += now.Sub(b.countAt)
		l.freed = append(l.freed, b)
		return true
	})
	for _, b := range l.freed {
		b.state, b.unit = free, nil
	}
	return l.freed, true
}
