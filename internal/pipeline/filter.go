package pipeline

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
	"github.com/subsync/subsync/state"
)

// The filter is the second stage, run by the producer on each mapped chunk in source order:
// it finds duplicate e-mails by the mapping's policy, applies the suppression list and, in a
// delta run, the fingerprints of what was last acknowledged. What it does not send becomes
// the chunk's outcomes, in ordinal order.
type filter struct {
	store       Store
	log         *slog.Logger
	mapper      *mapping.Mapper
	dedupe      *mapping.Deduper
	mappingFP   string
	listID      int64
	delta       bool
	suppression string
	fps         *state.FingerprintSet
	held        *Held // a verifying run: what the service holds
	dryRun      bool
	track       *tracker // a sync with a roster; nil otherwise
	// fpSeen has a bit per fingerprint loaded (FingerprintSet.Index): the addresses the run
	// read that the list has a fingerprint of are noted there, the others in the deduper's
	// set. A delta sync reads nearly only such addresses: a bit each instead of a hash in a
	// set (16 MB and a cache miss an address for a million).
	fpSeen []uint64

	sup        Suppressions // re-read whenever the list changed
	supChecked time.Time    // when the suppression list's version was last read
}

func newFilter(cfg Config) *filter {
	return &filter{store: cfg.Store, log: cfg.Logger, mapper: cfg.Mapper,
		dedupe:    cfg.Mapper.NewDeduper().Bound(cfg.MemoryBudget, cfg.TempDir),
		mappingFP: cfg.Mapper.Fingerprint(), listID: cfg.ListID, delta: cfg.Delta, suppression: cfg.Suppression,
		fps: cfg.Fingerprints, held: cfg.Held, dryRun: cfg.DryRun, sup: cfg.Suppressions, supChecked: time.Now(), track: newTracker(cfg),
		fpSeen: make([]uint64, seenWords(cfg.Fingerprints))}
}

// close releases the deduper's temporary file, and logs how its set used the memory budget.
func (f *filter) close(ctx context.Context) {
	st := f.dedupe.Stats()
	if err := f.dedupe.Close(); err != nil {
		f.log.WarnContext(ctx, "close the duplicate e-mails' spill file", slog.Any("error", err))
	}
	if st.Spills > 0 {
		f.log.DebugContext(ctx, "duplicate e-mails spilled", slog.Int64("addresses", st.Len),
			slog.Int64("spilled", st.Spilled), slog.Int("spills", st.Spills), slog.Int("merges", st.Merges),
			slog.Int64("filter_false_positives", st.Maybes), slog.Int64("lookups_past_memory", st.Probes),
			slog.Int64("page_reads", st.PageReads), slog.Int64("peak_bytes", st.PeakBytes),
			slog.Int64("file_bytes", st.FileBytes))
	}
}

// seenWords is the size of filter.fpSeen for the fingerprints: a bit per Index, none without
// any loaded.
func seenWords(fps *state.FingerprintSet) int {
	if fps.Len() == 0 {
		return 0
	}
	return (fps.IndexBound() + 63) / 64
}

// seen notes that the run read an e-mail (as mapped: trimmed and lower-cased) and reports
// whether it read it before. err is a failed read of fingerprints on file.
func (f *filter) seen(email string) (bool, error) {
	if len(f.fpSeen) > 0 {
		i, ok, err := f.fps.Index(state.EmailHash(email))
		if err != nil {
			return false, err
		}
		if ok {
			return f.seenAt(i), nil
		}
	}
	return f.dedupe.Observe(email), nil
}

// seenAt is seen for the address of the fingerprint loaded at position i.
func (f *filter) seenAt(i int) bool {
	w, bit := i/64, uint64(1)<<(i%64)
	was := f.fpSeen[w]&bit != 0
	f.fpSeen[w] |= bit
	return was
}

// run dedupes a mapped chunk by the mapping's policy, then filters its rows (see apply),
// leaving the outcomes in ordinal order. A delta run's records are first resolved (see
// resolve).
func (f *filter) run(ctx context.Context, c *chunk) error {
	for i, e := range c.observe {
		if _, err := f.seen(e); err != nil {
			return err
		}
		if t := f.track; t != nil {
			k := uint64(0)
			if t.keyed {
				k = state.KeyHash(c.obsKeys[i])
			}
			t.claim(state.EmailHash(e), k) // done before the restart: it claimed them then
		}
	}
	if t := f.track; t != nil {
		for _, h := range c.read {
			t.read(h)
		}
	}
	clear(c.observe)
	c.observe = c.observe[:0]
	c.dups = c.dups[:0]
	if len(c.cands) > 0 {
		if err := f.resolve(ctx, c); err != nil {
			return err
		}
	} else {
		if len(f.fpSeen) == 0 {
			// The duplicate check reads a slot of a table larger than the caches for every
			// row: touched for the whole chunk first, those reads wait for memory together.
			for i := range c.rows {
				f.dedupe.Prefetch(c.rows[i].Sub.Email)
			}
		}
		n := 0
		for i, row := range c.rows {
			send, dup, ok, err := f.check(c, &row, c.vals[i])
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			if send {
				c.rows[n], c.sources[n], c.vals[n] = row, c.sources[i], c.vals[i]
				c.dups = append(c.dups, dup)
				n++
			}
		}
		clear(c.rows[n:])
		clear(c.vals[n:])
		c.rows, c.sources, c.vals = c.rows[:n], c.sources[:n], c.vals[:n]
	}
	if err := f.dedupe.Err(); err != nil {
		return err // the chunk's verdicts mean nothing: it goes no further
	}
	if err := f.scrubErased(ctx, c); err != nil {
		return err
	}
	if err := f.apply(ctx, c); err != nil {
		return err
	}
	byOrd := func(a, b outcome) int { return cmp.Compare(a.ord, b.ord) }
	if !slices.IsSortedFunc(c.outcomes, byOrd) {
		slices.SortStableFunc(c.outcomes, byOrd)
	}
	return nil
}

// check runs a mapped row (of the source values given) past the deduper: send is whether it
// goes on, dup whether its e-mail came before; ok is false for a row the duplicate policy
// rejected. err is a failed read of fingerprints on file.
func (f *filter) check(c *chunk, row *mapping.Row, values []string) (send, dup, ok bool, err error) {
	if t := f.track; t != nil {
		if code := t.claim(state.EmailHash(row.Sub.Email), t.key(row)); code != "" {
			c.reject(f.mapper.KeyReject(row, code), values)
			return false, false, false, nil
		}
	}
	before := f.dedupe.Duplicates()
	was, err := f.seen(row.Sub.Email)
	if err != nil {
		return false, false, false, err
	}
	send, drej := f.dedupe.Decide(*row, was)
	dup = f.dedupe.Duplicates() > before
	if dup {
		if drej != nil {
			c.reject(*drej, values)
			return false, true, false, nil
		}
		c.outcomes = append(c.outcomes, newOutcome(row, outDuplicate, "", f.dryRun))
	}
	return send, dup, true, nil
}

// resolve turns a delta run's records into outcomes or mapped rows, in source order.
//
// A record whose e-mail has a stored fingerprint with the same source hash maps to the very
// payload that was last acknowledged (the hash covers the mapping and the values of every
// mapped column), and that payload is still what the service holds: the record is unchanged,
// without being mapped, unless its e-mail came earlier in the run (the deduper's verdict
// then needs the mapped row) or it is suppressed under update-keep-status (it is then sent
// with its status). Every other record is mapped and goes through the deduper and apply as
// in any run; apply compares its payload with the stored one.
//
// The stored fingerprint's key was the hash of the mapped e-mail, so a hit also says that the
// raw e-mail, trimmed and lower-cased, is the mapped one: the deduper gets it as it would.
func (f *filter) resolve(ctx context.Context, c *chunk) error {
	if err := f.refreshSuppressions(ctx); err != nil {
		return err
	}
	for i := range c.cands {
		cd := &c.cands[i]
		if c.candHit[i] && c.candFPs[i].Source == cd.src && f.unchanged(c, i, int(c.candIdx[i])) {
			continue
		}
		rec := &c.recs[i]
		if line := c.line(i); line != "" {
			// Its own copy: a sent row's values are kept until its batch is counted, and
			// the line's block holds a thousand other lines.
			rec.Values = sources.SplitLine(strings.Clone(line), c.delim)
		}
		row := c.mapRow(f.mapper, rec)
		if row == nil {
			continue
		}
		send, dup, ok, err := f.check(c, row, rec.Values)
		if err != nil {
			return err
		}
		if !ok || !send {
			c.dropRow()
			continue
		}
		c.sources = append(c.sources, cd.src)
		c.vals = append(c.vals, rec.Values)
		c.dups = append(c.dups, dup)
	}
	clear(c.cands) // drop the records
	clear(c.recs)
	clear(c.lines)
	c.cands, c.candKeys, c.recs, c.lines = c.cands[:0], c.candKeys[:0], c.recs[:0], c.lines[:0]
	return nil
}

// unchanged records the outcome of a candidate whose source values are what was last
// acknowledged, and reports true; or reports false when it must be mapped all the same: it
// is suppressed under update-keep-status, or its e-mail came before (the deduper then decides
// on the mapped row; seenAt noted the e-mail, so check counts it as the duplicate it is).
// i is the candidate's index in c; idx the position of its fingerprint
// (FingerprintSet.Index).
func (f *filter) unchanged(c *chunk, i, idx int) bool {
	key := c.candKeys[i]
	if f.sup.Erased(key) {
		return false // apply rejects it
	}
	st, suppressed := f.sup.Status(key)
	if suppressed && f.suppression == SuppressionUpdateKeepStatus {
		return false
	}
	if t := f.track; t != nil {
		// Unchanged without mapping only as the member the roster holds, with its key.
		member, ok := t.roster.Member(key)
		if !ok || t.keyed && t.claimed(key, member) {
			return false
		}
		if t.keyed {
			t.claim(key, member)
		}
	}
	if f.seenAt(idx) {
		return false
	}
	rec := &c.recs[i]
	o := outcome{ord: rec.Ordinal, kind: outUnchanged}
	if suppressed {
		o.kind = outSuppressed
	}
	if f.dryRun {
		o.note = &planNote{line: rec.Line, email: strings.Clone(c.cands[i].email), status: st}
	}
	if o.plain() {
		c.outcomes = appendUnchanged(c.outcomes, o)
	} else {
		c.outcomes = append(c.outcomes, o)
	}
	return true
}

// apply applies the suppression list and the delta fingerprints to the chunk's rows, and
// hashes the survivors' e-mails and payloads.
//
// The suppression list is checked for every chunk: its version is read (one primary-key
// lookup, at most every suppressionRecheck) and the list re-read when a status pull changed
// it since, so a pull that lands while a long run goes on takes effect within a tenth of a
// second. A suppressed row is never sent as active: it is skipped (SuppressionSkip), or sent
// with its suppressed status (SuppressionUpdateKeepStatus); either way it is counted as
// suppressed.
func (f *filter) apply(ctx context.Context, c *chunk) error {
	if len(c.rows) == 0 {
		return nil
	}
	if err := f.refreshSuppressions(ctx); err != nil {
		return err
	}
	c.skip = slices.Grow(c.skip[:0], len(c.rows))[:len(c.rows)]
	clear(c.skip)
	c.emails = slices.Grow(c.emails[:0], len(c.rows))[:len(c.rows)]
	c.payloads = slices.Grow(c.payloads[:0], len(c.rows))[:len(c.rows)]
	c.members = c.members[:0]
	if f.track != nil {
		c.members = slices.Grow(c.members, len(c.rows))[:len(c.rows)]
		clear(c.members)
	}
	f.suppress(c)
	switch {
	case f.held != nil:
		f.skipHeld(c)
	case f.delta && f.fps.Len() > 0:
		if err := f.skipUnchanged(c); err != nil {
			return err
		}
	}
	n := 0
	for i := range c.rows {
		if !c.skip[i] {
			c.rows[n], c.sources[n], c.vals[n], c.dups[n], c.emails[n], c.payloads[n] =
				c.rows[i], c.sources[i], c.vals[i], c.dups[i], c.emails[i], c.payloads[i]
			if len(c.members) > 0 {
				c.members[n] = c.members[i]
			}
			n++
		}
	}
	clear(c.rows[n:])
	clear(c.vals[n:])
	c.rows, c.sources, c.vals, c.dups, c.emails, c.payloads = c.rows[:n], c.sources[:n], c.vals[:n], c.dups[:n], c.emails[:n], c.payloads[:n]
	c.members = c.members[:min(n, len(c.members))]
	return nil
}

// skipUnchanged marks the rows whose payload is the one last acknowledged for their e-mail.
func (f *filter) skipUnchanged(c *chunk) error {
	c.stored = slices.Grow(c.stored[:0], len(c.rows))[:len(c.rows)]
	c.known = slices.Grow(c.known[:0], len(c.rows))[:len(c.rows)]
	if err := f.fps.LookupBatch(c.emails, c.stored, c.known, nil); err != nil {
		return err
	}
	for i := range c.rows {
		// A later row for an e-mail (duplicates = last) is sent even when unchanged: it
		// must win over an earlier row of this run that may have been sent.
		if !c.skip[i] && !c.dups[i] && c.known[i] && c.stored[i].Payload == c.payloads[i] {
			o := newOutcome(&c.rows[i], outUnchanged, c.rows[i].Status, f.dryRun)
			if c.stored[i].Source != c.sources[i] {
				o.refresh = &state.Fingerprint{Email: c.emails[i], Payload: c.payloads[i], Source: c.sources[i]}
			}
			if len(c.members) > 0 && c.members[i] != 0 {
				fl := c.members[i]
				r := &c.rows[i]
				o.member = &state.Member{Email: strings.Clone(r.Sub.Email), Key: strings.Clone(r.Sub.ExternalID),
					Moved: fl&memberMoved != 0}
			}
			c.outcomes = append(c.outcomes, o)
			c.skip[i] = true
		}
	}
	return nil
}

// payloadHash is the delta fingerprint of a row: the mapping (seed has hashed its
// fingerprint), the statuses and every field the push sends (custom fields in name order).
func payloadHash(seed state.Hasher, r *mapping.Row) uint64 {
	h := seed
	h.String(r.Status)
	h.String(r.StatusMobile)
	s := &r.Sub
	for _, v := range [...]string{s.Email, s.Firstname, s.Lastname, s.Address, s.Zip, s.City, s.Phone,
		s.Company, s.Birthday, s.Gender} {
		h.String(v)
	}
	h.Uint64(uint64(len(s.Fields)))
	for _, fl := range s.SortedFields() {
		h.String(fl.Name)
		h.String(fl.Value)
	}
	h.Uint64(uint64(len(s.Tags)))
	for _, t := range s.Tags {
		h.String(t)
	}
	if s.ExternalID != "" {
		// Only when set, so that a row without one keeps the fingerprint it had before
		// external_id was sent.
		h.String("external_id")
		h.String(s.ExternalID)
	}
	return h.Sum64()
}
