// Package export writes a run's rejects export, the one form every way out shares: the CLI's
// `subsync runs ID --rejects FILE`, the pages' download and the HTTP API call [Rejects], so
// they give the same bytes for the same options.
//
// A CSV export opens in a spreadsheet as it stands: UTF-8 with a byte-order mark (without it
// Excel reads æøå as Windows-1252), the fields separated by the source file's own delimiter
// (a semicolon file, as Excel writes it where the decimal mark is a comma, gives a semicolon
// export; a workbook or a SQL source a comma), and every cell a spreadsheet would run as a
// formula quoted (rejectfile.Neutralise). Only standard output, read by scripts, goes without
// the byte-order mark ([Options].NoBOM). An XLSX export is a workbook with one sheet,
// "Rejects": every cell is text but the line numbers, and nothing in it can be a formula, so
// no cell is quoted. Both import again as they stand: subsync reads the byte-order mark, the
// delimiter and workbooks, ignores the subsync: columns and takes the quoting away.
package export

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"

	"github.com/subsync/subsync/internal/rejectfile"
	"github.com/subsync/subsync/state"
)

// Formats of an export.
const (
	CSV  = "csv"
	XLSX = "xlsx"
)

// bom is UTF-8's byte-order mark.
const bom = "\uFEFF"

// SheetName is the worksheet of an XLSX export.
const SheetName = "Rejects"

// Options choose the form of an export. The zero value is the CSV export of a file or a
// download.
type Options struct {
	// Format is CSV ("" too) or XLSX.
	Format string
	// NoBOM leaves the byte-order mark out of a CSV export: for standard output, which
	// scripts read.
	NoBOM bool
}

// ParseFormat checks a format a person gave ("csv" or "xlsx", any case); "" is CSV.
func ParseFormat(s string) (string, error) {
	switch f := strings.ToLower(s); f {
	case "", CSV:
		return CSV, nil
	case XLSX:
		return XLSX, nil
	}
	return "", fmt.Errorf("format %q: want csv or xlsx", s)
}

// FormatOf returns the format a file name asks for: XLSX for a name ending in .xlsx, else CSV.
func FormatOf(name string) string {
	if strings.EqualFold(filepath.Ext(name), ".xlsx") {
		return XLSX
	}
	return CSV
}

// ContentType is the media type of an export in format.
func ContentType(format string) string {
	if format == XLSX {
		return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	}
	return "text/csv; charset=utf-8"
}

// FileName is the name a download of the export of run runID in format gets.
func FileName(runID int64, format string) string {
	if format == XLSX {
		return fmt.Sprintf("run-%d-rejects.xlsx", runID)
	}
	return fmt.Sprintf("run-%d-rejects.csv", runID)
}

// Rejects writes the rejects export of run runID (state.Store.ExportRows) to w, in the form
// opts asks for.
func Rejects(ctx context.Context, st *state.Store, runID int64, w io.Writer, opts Options) error {
	format, err := ParseFormat(opts.Format)
	if err != nil {
		return err
	}
	if format == XLSX {
		return writeXLSX(ctx, st, runID, w)
	}
	return writeCSV(ctx, st, runID, w, !opts.NoBOM)
}

func writeCSV(ctx context.Context, st *state.Store, runID int64, w io.Writer, withBOM bool) error {
	delim, err := st.SourceDelimiter(ctx, runID)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if withBOM {
		if _, err := bw.WriteString(bom); err != nil {
			return fmt.Errorf("write rejects csv: %w", err)
		}
	}
	cw := csv.NewWriter(bw)
	if delim != 0 && delim != '"' && delim != '\r' && delim != '\n' {
		cw.Comma = delim
	}
	err = st.ExportRows(ctx, runID, func(cells []string) error {
		for i := range cells {
			cells[i] = rejectfile.Neutralise(cells[i])
		}
		return cw.Write(cells)
	})
	if err != nil {
		return fmt.Errorf("write rejects csv: %w", err)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write rejects csv: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write rejects csv: %w", err)
	}
	return nil
}

func writeXLSX(ctx context.Context, st *state.Store, runID int64, w io.Writer) error {
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetSheetName("Sheet1", SheetName); err != nil {
		return fmt.Errorf("write rejects xlsx: %w", err)
	}
	sw, err := f.NewStreamWriter(SheetName)
	if err != nil {
		return fmt.Errorf("write rejects xlsx: %w", err)
	}
	lineCol := -1 // the column of subsync:line (or line), written as a number
	row := 0
	var cells []any
	err = st.ExportRows(ctx, runID, func(values []string) error {
		row++
		cells = cells[:0]
		for i, v := range values {
			if row == 1 && (v == rejectfile.Prefix+"line" || v == "line" && i == 0) {
				lineCol = i
			}
			if row > 1 && i == lineCol {
				if n, err := strconv.Atoi(v); err == nil {
					cells = append(cells, n)
					continue
				}
			}
			cells = append(cells, v)
		}
		cell, err := excelize.CoordinatesToCellName(1, row)
		if err != nil {
			return err
		}
		return sw.SetRow(cell, cells)
	})
	if err != nil {
		return fmt.Errorf("write rejects xlsx: %w", err)
	}
	if err := sw.Flush(); err != nil {
		return fmt.Errorf("write rejects xlsx: %w", err)
	}
	if err := f.Write(w); err != nil {
		return fmt.Errorf("write rejects xlsx: %w", err)
	}
	return nil
}
