package pipeline

import (
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
	"slices"
)

// chunkRows is how many records a chunk holds (mapped rows are filtered, suppression and
// delta, with one lookup a chunk).
const chunkRows = 1000

// engineChunks is how many filtered chunks wait for the engine to place them.
const engineChunks = 2

// A chunk is the one value passed between the stages: a stretch of the source read by the
// producer (records), mapped by its mapper pool (rows, rejects), filtered (the rows to send,
// the outcomes of the others), then placed by the batcher. Its rows and outcomes have
// ordinals in (the previous chunk's lastRead, lastRead].
//
// The arena rules, all of them in this file:
//
//   - mapping writes the values it makes (a lower-cased address, a phone number, a date, the
//     consent and custom field slices) into the chunk's Arena, through mapRow;
//   - a batch that takes a row keeps those values in its own rowMemory (keep), so the row
//     outlives the chunk; a reject's value is copied out (reject), for rejects outlive it too;
//   - release is the one place a chunk's Arena is reset: once the batcher placed the chunk,
//     nothing refers to its rows any more, and the chunk goes back to the producer for reuse;
//   - a batch's rowMemory is reset when the batch is reused for new rows, after its
//     checkpoint.
type chunk struct {
	recs   []sources.Record // read, to be mapped
	lines  []string         // with producer.lines: recs[i] is the line lines[i] unless it is ""
	delim  rune             // the lines' delimiter
	joined []byte           // scratch of sourceHash
	before []sources.Record // read, done before a restart: mapped for their e-mails only
	// cands are the records of a delta run, not yet mapped: those whose source values are
	// what was last acknowledged are unchanged without mapping (see filter.resolve).
	cands    []cand
	candFPs  []state.Fingerprint // the fingerprints stored for cands (looked up by a mapper)
	candHit  []bool              // whether one is stored
	candIdx  []int32             // where it is among the loaded ones (FingerprintSet.Index)
	candKeys []uint64            // the cands' e-mail hashes (EmailHash)
	rows     []mapping.Row
	arena    mapping.Arena    // the values the rows' mapping made; reset by release only
	sources  []uint64         // the rows' source hashes (sourceHash)
	vals     [][]string       // the rows' source values, for a reject made later (a duplicate, a refused row)
	warns    []mapping.Reject // scratch of mapRow: the values mapping dropped from a row
	dups     []bool           // the row's e-mail appeared earlier in the run
	emails   []uint64
	payloads []uint64
	outcomes []outcome           // in ordinal order once filtered
	observe  []string            // e-mails of rows done before a restart, for the deduper only
	obsKeys  []string            // the source keys of those rows (external_id), for the tracker
	read     []uint64            // with a roster: the e-mail hash of every record's e-mail cell
	members  []uint8             // with a roster: the rows' member flags (see roster.go)
	skip     []bool              // scratch of filter
	stored   []state.Fingerprint // scratch of filter: the fingerprints stored for the rows' e-mails
	known    []bool              // scratch of filter: whether one is stored
	lastRead int64
	bytes    int64 // source bytes consumed at the end of the chunk
	err      error // the producer stopped: ErrInterrupted, a read or lookup failure
	eof      bool  // the last chunk: the whole source is read
	gap      bool  // the last chunk of a resumed run that did not read every row before its checkpoint again
	cut      int   // the last chunk: the line the source was cut short in (sources.Truncated), or 0
}

// cand is a record of a delta run, read but not mapped: cands[i] is recs[i] (lines[i]),
// and its e-mail's hash is candKeys[i].
type cand struct {
	email string // its raw e-mail, trimmed and lower-cased (state.NormaliseEmail)
	src   uint64 // sourceHash of the record
}

// newChunk is an empty chunk starting after lastRead.
func newChunk(lastRead int64) *chunk {
	return &chunk{lastRead: lastRead, rows: make([]mapping.Row, 0, chunkRows)}
}

// release empties the chunk for reuse, keeping its arrays and its Arena's blocks: nothing
// may refer to the values of its rows any more (a batch keeps those it takes).
func (c *chunk) release() {
	clear(c.rows) // drop the strings the rows point at
	clear(c.recs)
	clear(c.lines)
	clear(c.outcomes)
	clear(c.cands)
	clear(c.vals)
	clear(c.warns)
	clear(c.obsKeys)
	c.arena.Reset()
	*c = chunk{arena: c.arena, recs: c.recs[:0], lines: c.lines[:0], joined: c.joined[:0], before: c.before[:0], rows: c.rows[:0], sources: c.sources[:0],
		dups: c.dups[:0], emails: c.emails[:0], payloads: c.payloads[:0], outcomes: c.outcomes[:0],
		skip: c.skip[:0], observe: c.observe[:0], stored: c.stored[:0], known: c.known[:0],
		cands: c.cands[:0], candFPs: c.candFPs[:0], candHit: c.candHit[:0], candIdx: c.candIdx[:0], candKeys: c.candKeys[:0], vals: c.vals[:0], warns: c.warns[:0],
		obsKeys: c.obsKeys[:0], read: c.read[:0], members: c.members[:0]}
}

// line is the line recs[i] was read as, or "".
func (c *chunk) line(i int) string {
	if i < len(c.lines) {
		return c.lines[i]
	}
	return ""
}

// mapRow maps rec in place, into the chunk's next row, and returns that row, recording a
// warning for each value mapping dropped (on_invalid = "drop"); or records the reject and
// returns nil. The caller appends the row's source hash and values (vals).
func (c *chunk) mapRow(m *mapping.Mapper, rec *sources.Record) *mapping.Row {
	c.rows = append(c.rows, mapping.Row{})
	row := &c.rows[len(c.rows)-1]
	c.warns = c.warns[:0]
	if rej := m.MapWarn(&c.arena, rec, row, &c.warns); rej != nil {
		c.dropRow()
		if rej.Code == mapping.CodeFiltered {
			c.outcomes = append(c.outcomes, outcome{ord: rec.Ordinal, kind: outFiltered})
			return nil
		}
		c.reject(*rej, rec.Values)
		return nil
	}
	if len(c.warns) > 0 {
		whole := state.EncodeRow(rec.Values)
		for _, w := range c.warns {
			rec := rejectRecord(&w, whole)
			c.outcomes = append(c.outcomes, outcome{ord: w.Ordinal, kind: outWarning, reject: &rec})
		}
		clear(c.warns)
	}
	return row
}

// observeOnly maps a record done before a restart for its e-mail, which the deduper observes.
func (c *chunk) observeOnly(m *mapping.Mapper, rec *sources.Record) {
	var row mapping.Row
	if rej := m.MapInto(&c.arena, rec, &row); rej == nil {
		c.observe = append(c.observe, row.Sub.Email)
		c.obsKeys = append(c.obsKeys, row.Sub.ExternalID)
	}
}

// dropRow takes back the chunk's last row, leaving its slot holding nothing of the record.
func (c *chunk) dropRow() {
	c.rows[len(c.rows)-1] = mapping.Row{}
	c.rows = c.rows[:len(c.rows)-1]
}

// reject records a reject with its source row (values) whole; its value is copied, for it
// may be one mapping made in the chunk's Arena (a lower-cased duplicate e-mail), and the
// reject outlives the chunk. A row rejected after mapping dropped a value of it (a duplicate)
// is not sent, so its warnings go: they are for rows sent without a value.
func (c *chunk) reject(r mapping.Reject, values []string) {
	rec := rejectRecord(&r, state.EncodeRow(values)) // copies the value out of the chunk's arena
	c.outcomes = slices.DeleteFunc(c.outcomes, func(o outcome) bool { return o.kind == outWarning && o.ord == r.Ordinal })
	c.outcomes = append(c.outcomes, outcome{ord: r.Ordinal, kind: outRejected, reject: &rec})
}

// rowMemory is where a batch keeps the values of its rows that mapping made in a chunk.
type rowMemory struct{ arena mapping.Arena }

// keep copies the values of r made in c's Arena into m, so that r outlives c.
func (m *rowMemory) keep(r *mapping.Row, c *chunk) { m.arena.Adopt(r, &c.arena) }

// reset forgets the values kept, for a batch reused after its checkpoint.
func (m *rowMemory) reset() { m.arena.Reset() }
