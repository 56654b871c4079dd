package jobs

import (
	"context"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
)

// recordSource records, once per attempt (the same each time), what the rejects export of the
// run takes from its source: the header, written above the rejected rows, and a CSV file's
// delimiter, which the export is written with (a semicolon file gives a semicolon export);
// and, for the run's page and runs ID, the source columns the mapping does not send.
func (rt *Runtime) recordSource(ctx context.Context, a *attempt, r sources.Reader, m *mapping.Mapper) error {
	if err := rt.store.SetSourceHeader(ctx, a.run.ID, a.owner, r.Header()); err != nil {
		return err
	}
	var ignored []string
	for _, p := range m.Plan() {
		if p.Target == mapping.TargetIgnore {
			ignored = append(ignored, p.Column)
		}
	}
	if err := rt.store.SetColumnsNotSent(ctx, a.run.ID, a.owner, m.Unplaced(), ignored); err != nil {
		return err
	}
	if d, ok := r.(interface{ Delimiter() rune }); ok {
		return rt.store.SetSourceDelimiter(ctx, a.run.ID, a.owner, d.Delimiter())
	}
	return nil
}
