package jobs

import (
	"context"
	"maps"
	"slices"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// sampleRows is how many of a file's first rows decide between candidate columns (automatic
// mapping) and the order of its date columns.
const sampleRows = 1000

// PreparedSpec is a mapping made ready for one source by PrepareSpec.
type PreparedSpec struct {
	Spec     mapping.Spec
	Unplaced []string            // columns automatic mapping could not place
	Choices  []mapping.Choice    // columns automatic mapping chose by their data
	Dates    []mapping.DateOrder // how the order of each date column without one was decided
	Sampled  int                 // rows sampled (0: none)
}

// PrepareSpec makes spec ready for the source src with header, as a run and preview do: the
// columns it does not map mapped by their names (see mapping.Spec.WithAutoSampled), and the
// order of its date columns that have none decided from the file's first rows
// (mapping.Spec.WithDateOrders). A file is sampled (opened once more, its first sampleRows
// rows read) only when something is to be decided; a SQL source is not sampled (its
// query would run twice): its date columns take date_format, or a hint of their names.
func PrepareSpec(ctx context.Context, spec mapping.Spec, src sources.Config, header []string) (PreparedSpec, error) {
	var p PreparedSpec
	var sample [][]string
	if src.Kind != "sql" && needsSample(spec, header) {
		var err error
		if sample, err = SampleRows(ctx, src, sampleRows); err != nil {
			return p, err
		}
		p.Sampled = len(sample)
	}
	p.Spec, p.Unplaced, p.Choices = spec.WithAutoSampled(header, sample)
	p.Spec, p.Dates = p.Spec.WithDateOrders(header, sample)
	return p, nil
}

// needsSample reports whether making spec ready for header decides anything from the data:
// a choice between the columns automatic mapping places, or the order of a date column.
func needsSample(spec mapping.Spec, header []string) bool {
	var rest []string
	for _, i := range spec.AutoColumns(header) {
		rest = append(rest, header[i])
	}
	if mapping.Ambiguous(rest) {
		return true
	}
	if spec.DateFormat != "" {
		return false
	}
	auto, _ := spec.WithAuto(header)
	for _, c := range auto.Columns {
		if c.DateFormat == "" && (c.To == sink.FieldBirthday || c.To == mapping.TargetCustom) {
			return true
		}
	}
	return false
}

// readStable makes a SQL source read in a stable order (sources.SQLOptions.Stable): by the
// column m maps to external_id when it maps one, then by the whole row, so which duplicate
// wins and the line a row is reported at are the same in every run. m may be nil.
func readStable(src sources.Config, m *mapping.Spec) sources.Config {
	if src.Kind != sources.KindSQL {
		return src
	}
	src.Stable = true
	if m != nil {
		for _, col := range slices.Sorted(maps.Keys(m.Columns)) {
			if m.Columns[col].To == sink.FieldExternalID {
				src.OrderBy = col
				break
			}
		}
	}
	return src
}
