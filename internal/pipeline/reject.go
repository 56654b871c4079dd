package pipeline

import (
	"strings"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/state"
)

// rejectRecord is a reject as the run history keeps it (state.Reject), with its source row
// as state.EncodeRow wrote it ("" when it is not kept): the one conversion of a reject,
// whether mapping made it or the service refused the row (mapping.CodeRefused). Its values
// are copied, for they may be values mapping made in a chunk's Arena, and the record outlives
// the chunk.
func rejectRecord(r *mapping.Reject, row string) state.Reject {
	rec := state.Reject{Ordinal: r.Ordinal, Line: r.Line, Sheet: r.Sheet, Column: r.Column,
		Value: strings.Clone(r.Value), Code: r.Code, Reason: r.Message, Row: row}
	for _, f := range r.More {
		rec.More = append(rec.More, state.Problem{Column: f.Column, Value: strings.Clone(f.Value), Code: f.Code,
			Reason: f.Message})
	}
	return rec
}
