package jobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sources"
)

// Preview is a file source opened as an import reads it, with the mapping compiled against
// its header: what `subsync preview` and the import page preview (mapping.Preview,
// mapping.PreviewTo) before they close Reader.
type Preview struct {
	Reader sources.Reader
	Mapper *mapping.Mapper
	// Prepared is the mapping made ready for the file (PrepareSpec): the automatic mapping's
	// choices between candidate columns and the order of date columns, from the rows sampled.
	Prepared PreparedSpec
}

// OpenPreview opens a file source as an import does (a workbook's sheet and header row found
// by the column the mapping sends as the e-mail), makes spec ready for it as a run does
// (PrepareSpec) and compiles it with the custom fields fs has; nothing is created in the
// service. An error of the mapping is a *mapping.SpecError; one of the source wraps what
// sources.Open said, after "open PATH".
func OpenPreview(ctx context.Context, src sources.Config, spec mapping.Spec, fs mapping.FieldService) (Preview, error) {
	src.IsHeader = HeaderMapsEmail(&spec)
	src = readStable(src, &spec)
	r, err := sources.Open(ctx, src)
	if err != nil {
		return Preview{}, fmt.Errorf("open %s: %w", src.Path, err)
	}
	p := Preview{Reader: r}
	ok := false
	defer func() {
		if !ok {
			_ = r.Close()
		}
	}()
	if p.Prepared, err = PrepareSpec(ctx, spec, src, r.Header()); err != nil {
		return Preview{}, fmt.Errorf("open %s: %w", src.Path, err)
	}
	fields, err := mapping.ResolveDryRun(ctx, fs, p.Prepared.Spec)
	if err != nil {
		return Preview{}, err
	}
	if p.Mapper, err = mapping.Compile(p.Prepared.Spec, r.Header(), fields); err != nil {
		return Preview{}, err
	}
	ok = true
	return p, nil
}

// SamplesPerColumn is how many values of each column the import page shows, found in the
// first samplesFrom rows.
const (
	SamplesPerColumn = 3
	samplesFrom      = 200
)

// FileFacts are what the import page shows of a file before it is mapped: what the reader
// found (the kind; a CSV's encoding, byte-order mark and delimiter; a workbook's sheets, the
// one read, and the row its header is on), the columns with a few of their values, and the
// mapping a run would make of them (PrepareSpec with no mapping).
type FileFacts struct {
	Kind      string
	Encoding  string
	BOM       bool
	Delimiter string // as a configuration writes it: ";", ",", "tab"
	Sheet     string
	Sheets    []string
	HeaderRow int
	Header    []string
	// Samples holds, for each column, its first SamplesPerColumn values that are not empty.
	Samples [][]string
	// Auto is the automatic mapping (spec.WithAutoSampled), Unplaced the columns it left out.
	Auto     mapping.Spec
	Unplaced []string
	Choices  []mapping.Choice
}

// InspectFile opens a file source as OpenPreview does with no mapping, and tells what it found.
func InspectFile(ctx context.Context, src sources.Config) (FileFacts, error) {
	var spec mapping.Spec
	src.IsHeader = HeaderMapsEmail(&spec)
	kind := src.Kind
	if kind == "" {
		k, err := sources.KindOf(src.Path)
		if err != nil {
			return FileFacts{}, err
		}
		kind = k
	}
	r, err := sources.Open(ctx, src)
	if err != nil {
		return FileFacts{}, err
	}
	defer r.Close()
	f := FileFacts{Kind: kind, Header: r.Header()}
	if x, ok := r.(*sources.CSVReader); ok {
		f.Encoding, f.BOM, f.Delimiter, f.HeaderRow = x.Encoding(), x.BOM(), DelimiterName(x.Delimiter()), x.HeaderLine()
	}
	if x, ok := r.(*sources.XLSXReader); ok {
		f.Sheet, f.Sheets, f.HeaderRow = x.Sheet(), x.Sheets(), x.HeaderLine()
	}
	f.Samples = make([][]string, len(f.Header))
	for n := 0; n < samplesFrom; n++ {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		var re *sources.RowError
		if errors.As(err, &re) {
			continue
		}
		if err != nil {
			return FileFacts{}, err
		}
		for i, v := range rec.Values {
			if i < len(f.Samples) && len(f.Samples[i]) < SamplesPerColumn && strings.TrimSpace(v) != "" {
				f.Samples[i] = append(f.Samples[i], v)
			}
		}
	}
	prep, err := PrepareSpec(ctx, spec, src, f.Header)
	if err != nil {
		return FileFacts{}, err
	}
	f.Auto, f.Unplaced, f.Choices = prep.Spec, prep.Unplaced, prep.Choices
	return f, nil
}

// DelimiterName is a CSV delimiter as a configuration (and --delimiter) writes it.
func DelimiterName(d rune) string {
	if d == '\t' {
		return "tab"
	}
	return string(d)
}
