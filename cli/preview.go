package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/mapping"
	"github.com/subsync/subsync/sink"
	"github.com/subsync/subsync/sources"
)

// fileSourceFlags are the flags of a command that reads a CSV or XLSX file.
type fileSourceFlags struct {
	kind, encoding, delimiter, sheet string
	sheetIndex, headerRow            int
}

func (f *fileSourceFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.kind, "kind", "", "csv or xlsx (default: from the file name and content)")
	fl.StringVar(&f.encoding, "encoding", "", "CSV encoding: utf-8, windows-1252, iso-8859-15, utf-16le, utf-16be or another WHATWG label (default: detected)")
	fl.StringVar(&f.delimiter, "delimiter", "", `CSV delimiter: one ASCII character, or "tab" (default: detected)`)
	fl.StringVar(&f.sheet, "sheet", "", "XLSX worksheet by name")
	fl.IntVar(&f.sheetIndex, "sheet-index", 0, "XLSX worksheet by position, 0 = first (when --sheet is not given)")
	fl.IntVar(&f.headerRow, "header-row", 0, "1-based row holding the column names (0: the first non-empty row)")
}

func (f *fileSourceFlags) config(path string) (sources.Config, error) {
	if f.headerRow < 0 {
		return sources.Config{}, usagef("--header-row %d: want 1 or more (0: the first non-empty row)", f.headerRow)
	}
	if f.sheetIndex < 0 {
		return sources.Config{}, usagef("--sheet-index %d: want 0 or more", f.sheetIndex)
	}
	switch f.kind {
	case "", "csv", "xlsx":
	default:
		return sources.Config{}, usagef("--kind %q: want csv or xlsx", f.kind)
	}
	return sources.Config{
		Kind: f.kind, Path: path, Encoding: f.encoding, Delimiter: f.delimiter,
		Sheet: f.sheet, SheetIndex: f.sheetIndex, HeaderRow: f.headerRow,
	}, nil
}

// lazyFields is the service's custom fields, fetched only when a mapping names one: a preview
// of a mapping without custom fields needs neither credentials nor the network. Each call is
// bounded by --service-timeout and a failure names api.base_url and its cause, as lists ls.
type lazyFields struct{ a *app }

func (l lazyFields) CustomFields(ctx context.Context) ([]sink.CustomField, error) {
	c, err := l.a.client()
	if err != nil {
		return nil, err
	}
	ctx, cancel := l.a.interactive(ctx)
	defer cancel()
	fs, err := c.CustomFields(ctx)
	return fs, l.a.explainService(err)
}

func (l lazyFields) CreateCustomField(ctx context.Context, f sink.CustomField) (sink.CustomField, error) {
	c, err := l.a.client()
	if err != nil {
		return sink.CustomField{}, err
	}
	ctx, cancel := l.a.interactive(ctx)
	defer cancel()
	created, err := c.CreateCustomField(ctx, f)
	return created, l.a.explainService(err)
}

// loadSpec returns the mapping of --mapping FILE, or of the configured sync NAME, or the
// zero spec (columns mapped automatically by their names).
func (a *app) loadSpec(mappingFile, syncName string) (mapping.Spec, error) {
	switch {
	case mappingFile != "" && syncName != "":
		return mapping.Spec{}, usagef("give --mapping or --sync, not both")
	case mappingFile != "":
		spec, err := mapping.LoadSpec(mappingFile)
		if err != nil {
			return mapping.Spec{}, &usageError{err}
		}
		return spec, nil
	case syncName != "":
		cfg, err := a.config()
		if err != nil {
			return mapping.Spec{}, err
		}
		for _, s := range cfg.Syncs {
			if s.Name == syncName {
				if s.Mapping.Spec == nil {
					return mapping.Spec{}, nil
				}
				return *s.Mapping.Spec, nil
			}
		}
		return mapping.Spec{}, usagef("no sync named %q in %s", syncName, cfg.Path)
	}
	return mapping.Spec{}, nil
}

func (a *app) previewCommand() *cobra.Command {
	var (
		src         fileSourceFlags
		mappingFile string
		syncName    string
		rows        int
		asJSON      bool
	)
	cmd := &cobra.Command{
		Use:   "preview FILE",
		Short: "Dry run: how the rows of a file map, and why rejected rows are rejected",
		Long: `Read a CSV or XLSX file through a mapping and show how the columns map, the first rows as
they would be sent, and every rejected row with its line and reason. Nothing is sent and
nothing is created: custom fields the mapping would create are shown as "(new) <label>".

The mapping comes from --mapping FILE, or from the configured sync --sync NAME; without
either, columns are mapped by their names (email, firstname, Fornavn, …) and the columns
that could not be placed are listed. The service is contacted only to look up the custom
fields a mapping names.`,
		Example: `  subsync preview contacts.csv
  subsync preview contacts.csv --mapping contacts.mapping.toml --rows 20
  subsync preview members.xlsx --sheet Members --json
  subsync preview export.csv --sync newsletter-export`,
		Args: cobra.ExactArgs(1),
		RunE: a.run(func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := checkImportFile(args[0]); err != nil {
				return err // missing, a directory, an .xls: the user's to fix (exit 2), as for import
			}
			scfg, err := src.config(args[0])
			if err != nil {
				return err
			}
			spec, err := a.loadSpec(mappingFile, syncName)
			if err != nil {
				return err
			}
			p, err := jobs.OpenPreview(ctx, scfg, spec, lazyFields{a}) // as an import reads and maps it
			if err != nil {
				return mappingError(err)
			}
			defer p.Reader.Close()
			for _, c := range p.Prepared.Choices {
				fmt.Fprintf(a.stderr, "%s: column %q chosen (a value in %d of %d sampled rows); alternatives: %s\n",
					c.Target, c.Column, c.Filled, p.Prepared.Sampled, strings.Join(c.Alternatives, ", "))
			}
			for _, d := range p.Prepared.Dates {
				fmt.Fprintf(a.stderr, "dates in %q: %s (%s)\n", d.Column, cmp.Or(d.Order, "order undecided, ambiguous dates dropped"), d.Reason)
			}
			_, err = mapping.Preview(ctx, a.stdout, p.Reader, p.Mapper, mapping.PreviewOptions{Rows: rows, JSON: asJSON})
			if err != nil {
				return fmt.Errorf("preview %s: %w", args[0], err)
			}
			return nil
		}),
	}
	src.add(cmd)
	cmd.Flags().StringVar(&mappingFile, "mapping", "", "mapping file (TOML)")
	cmd.Flags().StringVar(&syncName, "sync", "", "use the mapping of this configured sync")
	cmd.Flags().IntVar(&rows, "rows", mapping.DefaultPreviewRows, "mapped rows to show")
	jsonFlag(cmd, &asJSON)
	return cmd
}

// mappingError makes a mapping that does not fit its source a usage error (exit 2).
func mappingError(err error) error {
	var se *mapping.SpecError
	if errors.As(err, &se) {
		return &usageError{err}
	}
	return err
}
