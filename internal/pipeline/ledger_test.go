package pipeline

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/state"
)

// ledgerStep is one thing that happens to a ledger, with what it must say then. The ledger
// runs on one goroutine and starts none: a test plays the engine, the batcher, the service
// and the committer.
type ledgerStep struct {
	send   int              // batch sent (its number, from 1)
	answer int              // batch answered: res, or err
	res    sink.BatchResult //
	err    error            //
	await  []outcome        // outcomes of rows not sent
	// count: a checkpoint is counted with the last row read and the first row held (the
	// engine's); wantUnit is what it must hold (nil: nothing new to count).
	count          bool
	lastRead, held int64
	wantUnit       *state.Checkpoint
	wantFPs        int
	// write: the committer hands back the last checkpoint counted (failed with writeErr);
	// wantFreed are the batches it frees.
	write     bool
	writeErr  error
	wantFreed []int
	// room: whether batch room may be sent now, and whether for a conflict.
	room                   int
	wantRoom, wantConflict bool
	wantErr                error // the ledger's first error after the step
}

// testBatch is a batch of the rows with the ordinals given (person<ord>@example.com); its rows
// whose e-mail came earlier in the run are those of dups.
func testBatch(ords []int64, dups ...int64) *batch {
	b := &batch{minOrd: ords[0], maxOrd: ords[len(ords)-1]}
	for _, o := range ords {
		email := fmt.Sprintf("person%d@example.com", o)
		b.rows = append(b.rows, sink.Subscriber{Email: email})
		b.ords = append(b.ords, o)
		b.lines = append(b.lines, int(o)+1)
		b.emails = append(b.emails, state.EmailHash(email))
		b.payloads = append(b.payloads, uint64(o))
		b.sources = append(b.sources, uint64(o))
		b.vals = append(b.vals, []string{email})
	}
	for _, o := range dups {
		b.dupEmails = append(b.dupEmails, state.EmailHash(fmt.Sprintf("person%d@example.com", o)))
	}
	return b
}

// TestLedger: the ledger's books, step by step: what a checkpoint counts and where it stands,
// when a batch may be sent, when its slot is free, and what a failure stops.
func TestLedger(t *testing.T) {
	t.Parallel()
	wait := &sink.APIError{StatusCode: 429, RetryAfter: time.Minute}
	lost := errors.New("lease lost")
	cases := []struct {
		name    string
		window  int
		batches [][]int64 // the ordinals of each batch's rows
		dups    map[int][]int64
		steps   []ledgerStep
	}{{
		// An acknowledged batch is counted whole by the next checkpoint (a refused row as a
		// reject, recorded whole), its rows above the checkpoint recorded as acknowledged, and
		// its slot freed once that checkpoint is written; the outcomes of the rows not sent
		// are counted with the checkpoint that covers them.
		name: "a batch is counted whole", window: 2, batches: [][]int64{{1, 2, 5, 6}},
		steps: []ledgerStep{
			{send: 1},
			{await: []outcome{{ord: 3, kind: outDuplicate}, {ord: 4, kind: outRejected, reject: &state.Reject{Line: 5}}}},
			{answer: 1, res: sink.BatchResult{Sent: 3, Requests: 2, Retries: 1,
				Rejects: []sink.RowReject{{Index: 2, Email: "person5@example.com", Reason: "refused"}}}},
			{count: true, lastRead: 6, held: 4, wantFPs: 3, wantUnit: &state.Checkpoint{Position: 3,
				Delta: state.Counts{Read: 3, Sent: 3, Rejected: 1, Duplicates: 1, Batches: 1, Requests: 2, Retries: 1},
				Acked: [][]int64{{5, 6}},
				Rejects: []state.Reject{{Ordinal: 5, Line: 6, Value: "person5@example.com", Code: mapping.CodeRefused,
					Reason: "refused", Row: `["person5@example.com"]`}}}},
			{write: true, wantFreed: []int{1}}, // before the checkpoint passes its last row
			{count: true, lastRead: 6, wantUnit: &state.Checkpoint{Position: 6, Delta: state.Counts{Read: 3, Rejected: 1},
				Rejects: []state.Reject{{Line: 5}}}},
			{count: true, lastRead: 6}, // nothing new
		},
	}, {
		// The unchanged rows of a delta sync come as runs (one outcome for many rows); a
		// checkpoint inside a run counts the rows at or below it, and the next the rest.
		name: "runs of unchanged rows are split", window: 1,
		steps: []ledgerStep{
			{await: []outcome{{ord: 3, run: 3, kind: outUnchanged}, {ord: 4, kind: outDuplicate}, {ord: 10, run: 6, kind: outUnchanged}}},
			{count: true, lastRead: 2, wantUnit: &state.Checkpoint{Position: 2, Delta: state.Counts{Read: 2, Unchanged: 2}}},
			{count: true, lastRead: 7, wantUnit: &state.Checkpoint{Position: 7, Delta: state.Counts{Read: 5, Unchanged: 4, Duplicates: 1}}},
			{count: true, lastRead: 10, wantUnit: &state.Checkpoint{Position: 10, Delta: state.Counts{Read: 3, Unchanged: 3}}},
		},
	}, {
		// The checkpoint never passes a row the engine holds or a batch not acknowledged;
		// a batch acknowledged before an earlier one is counted at once all the same.
		name: "the position waits for the first unacknowledged row", window: 4, batches: [][]int64{{1, 2, 3}, {4, 5, 6}},
		steps: []ledgerStep{
			{send: 1}, {send: 2},
			{count: true, lastRead: 9, held: 7},
			{answer: 2, res: sink.BatchResult{Sent: 3, Requests: 1}},
			{count: true, lastRead: 9, held: 7, wantFPs: 3, wantUnit: &state.Checkpoint{Position: 0,
				Delta: state.Counts{Sent: 3, Batches: 1, Requests: 1}, Acked: [][]int64{{4, 5, 6}}}},
			{answer: 1, res: sink.BatchResult{Sent: 3, Requests: 1}},
			{count: true, lastRead: 9, held: 7, wantFPs: 3, wantUnit: &state.Checkpoint{Position: 6,
				Delta: state.Counts{Read: 6, Sent: 3, Batches: 1, Requests: 1}}},
		},
	}, {
		// The outcomes of the rows of a batch acknowledged above the checkpoint (a duplicate
		// sent, a value dropped) are counted with the batch: an attempt resuming at the
		// checkpoint reads those rows for their e-mails only, so would never count them (#35).
		name: "the outcomes of rows acknowledged above the checkpoint", window: 4, batches: [][]int64{{1, 2}, {3, 4}},
		steps: []ledgerStep{
			{send: 1}, {send: 2},
			{await: []outcome{{ord: 2, kind: outWarning, reject: &state.Reject{Line: 3}}, {ord: 4, kind: outDuplicate},
				{ord: 4, kind: outWarning, reject: &state.Reject{Line: 5}}, {ord: 5, kind: outDuplicate}}},
			{answer: 2, res: sink.BatchResult{Sent: 2, Requests: 1}},
			{count: true, lastRead: 5, wantFPs: 2, wantUnit: &state.Checkpoint{Position: 0,
				Delta: state.Counts{Sent: 2, Duplicates: 1, Batches: 1, Requests: 1}, Acked: [][]int64{{3, 4}},
				Warnings: []state.Reject{{Line: 5}}}},
			{answer: 1, res: sink.BatchResult{Requests: 1}, err: wait, wantErr: wait},
			{count: true, lastRead: 5, wantUnit: &state.Checkpoint{Position: 0, Delta: state.Counts{Requests: 1, Retries: 1}},
				wantErr: wait}, // the attempt ends: rows 1 and 2 are sent again, 3 and 4 only read
		},
	}, {
		// A batch whose request failed is the run's failure and holds the checkpoint; its
		// requests are counted all the same, the one answered with a wait as a retry too.
		name: "a failed batch", window: 2, batches: [][]int64{{1, 2}, {3, 4}},
		steps: []ledgerStep{
			{send: 1}, {send: 2},
			{answer: 1, res: sink.BatchResult{Sent: 2, Requests: 1}},
			{answer: 2, res: sink.BatchResult{Requests: 2}, err: wait, wantErr: wait},
			{count: true, lastRead: 4, wantFPs: 2, wantUnit: &state.Checkpoint{Position: 2,
				Delta: state.Counts{Read: 2, Sent: 2, Batches: 1, Requests: 3, Retries: 1}}, wantErr: wait},
			{write: true, wantFreed: []int{1}, wantErr: wait},
			{count: true, lastRead: 4, wantErr: wait},
		},
	}, {
		// At most the window's batches are sent and not yet written: a slot is free once the
		// checkpoint counting its batch is written, not when the batch is answered.
		name: "the window", window: 2, batches: [][]int64{{1}, {2}, {3}},
		steps: []ledgerStep{
			{send: 1}, {send: 2},
			{room: 3, wantRoom: false},
			{answer: 1, res: sink.BatchResult{Sent: 1, Requests: 1}},
			{room: 3, wantRoom: false},
			{count: true, lastRead: 3, held: 3, wantFPs: 1, wantUnit: &state.Checkpoint{Position: 1,
				Delta: state.Counts{Read: 1, Sent: 1, Batches: 1, Requests: 1}}},
			{room: 3, wantRoom: false},
			{write: true, wantFreed: []int{1}},
			{room: 3, wantRoom: true},
		},
	}, {
		// A batch with a row whose e-mail is in a sent batch not yet answered waits for that
		// answer, so that the last row for an e-mail wins.
		name: "a later row for an e-mail waits", window: 4, batches: [][]int64{{1, 2}, {3}, {4, 5}},
		dups: map[int][]int64{3: {2}},
		steps: []ledgerStep{
			{send: 1}, {send: 2},
			{room: 3, wantRoom: false, wantConflict: true},
			{answer: 2, res: sink.BatchResult{Sent: 1, Requests: 1}},
			{room: 3, wantRoom: false, wantConflict: true},
			{answer: 1, res: sink.BatchResult{Sent: 2, Requests: 1}},
			{room: 3, wantRoom: true},
		},
	}, {
		// A full window of acknowledged batches with no checkpoint pending lets a batch go:
		// their checkpoint may wait for rows of the batch to send.
		name: "a full window of acknowledged batches", window: 1, batches: [][]int64{{2}, {1}},
		steps: []ledgerStep{
			{send: 1},
			{room: 2, wantRoom: false},
			{answer: 1, res: sink.BatchResult{Sent: 1, Requests: 1}},
			{room: 2, wantRoom: true},
		},
	}, {
		// A checkpoint that fails to be written (the lease was lost) is the run's failure:
		// its batches stay in the window, and nothing more is counted.
		name: "a failed checkpoint", window: 1, batches: [][]int64{{1}},
		steps: []ledgerStep{
			{send: 1},
			{answer: 1, res: sink.BatchResult{Sent: 1, Requests: 1}},
			{count: true, lastRead: 2, wantFPs: 1, wantUnit: &state.Checkpoint{Position: 2,
				Delta: state.Counts{Read: 2, Sent: 1, Batches: 1, Requests: 1}}},
			{write: true, writeErr: lost, wantErr: lost},
			{count: true, lastRead: 3, wantErr: lost},
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newLedger(Config{RunID: 1, Owner: "o", LeaseTTL: time.Minute, Window: tc.window})
			bs := map[int]*batch{}
			for i, ords := range tc.batches {
				bs[i+1] = testBatch(ords, tc.dups[i+1]...)
			}
			var last *commitUnit
			for k, s := range tc.steps {
				where := fmt.Sprintf("step %d", k+1)
				switch {
				case s.send > 0:
					l.sent(bs[s.send])
					require.Equal(t, sent, bs[s.send].state, where)
				case s.answer > 0:
					b := bs[s.answer]
					b.res, b.err = s.res, s.err
					require.Equal(t, s.err == nil, l.answered(b), where)
					require.Equal(t, answered, b.state, where)
				case s.await != nil:
					l.await(s.await)
				case s.count:
					u := l.count(s.lastRead, s.held, 0)
					if s.wantUnit == nil {
						require.Nil(t, u, where)
						break
					}
					require.NotNil(t, u, where)
					want := *s.wantUnit
					want.RunID, want.Owner, want.TTL = 1, "o", time.Minute
					require.Equal(t, want, u.cp, where)
					require.Len(t, u.fps, s.wantFPs, where)
					l.queued()
					last = u
				case s.write:
					last.err = s.writeErr
					freed, ok := l.written(last)
					require.Equal(t, s.writeErr == nil, ok, where)
					var want []*batch
					for _, n := range s.wantFreed {
						want = append(want, bs[n])
						require.Equal(t, free, bs[n].state, where)
					}
					require.Equal(t, want, freed, where)
				case s.room > 0:
					ok, conflict := l.room(bs[s.room])
					require.Equal(t, s.wantRoom, ok, where+": room")
					require.Equal(t, s.wantConflict, conflict, where+": conflict")
				}
				require.Equal(t, s.wantErr, l.err, where)
			}
		})
	}
}
