// Command excelize writes excelize.xlsx (excelize's File API) and excelize-stream.xlsx (its
// StreamWriter) from rows.json, as a Go program using excelize would: each cell typed, dates
// as time.Time with a number format. It lives under testdata so that it is never part of
// subsync's build; run it from this directory: go run ./excelize
package main

import (
	"encoding/json"
	"fmt"
	"log"
	"os"
	"runtime/debug"
	"time"

	"github.com/xuri/excelize/v2"
)

type corpus struct {
	Sheet   string `json:"sheet"`
	Columns []struct {
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"columns"`
	Rows [][]any `json:"rows"`
}

func main() {
	b, err := os.ReadFile("rows.json")
	if err != nil {
		log.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(b, &c); err != nil {
		log.Fatal(err)
	}
	if err := writeFile(c, "excelize.xlsx"); err != nil {
		log.Fatal(err)
	}
	if err := writeStream(c, "excelize-stream.xlsx"); err != nil {
		log.Fatal(err)
	}
	fmt.Println("excelize", version())
}

// styles makes the date and date-time styles.
func styles(f *excelize.File) (map[string]int, error) {
	out := map[string]int{}
	for kind, code := range map[string]string{"date": "yyyy-mm-dd", "datetime": "yyyy-mm-dd hh:mm:ss"} {
		id, err := f.NewStyle(&excelize.Style{CustomNumFmt: &code})
		if err != nil {
			return nil, err
		}
		out[kind] = id
	}
	return out, nil
}

// value turns a rows.json value into what excelize takes for its column's type.
func value(kind string, v any) (any, error) {
	switch {
	case v == nil:
		return nil, nil
	case kind == "date":
		return time.Parse(time.DateOnly, v.(string))
	case kind == "datetime":
		return time.Parse("2006-01-02T15:04:05", v.(string))
	case kind == "number":
		f := v.(float64)
		if f == float64(int64(f)) {
			return int64(f), nil
		}
		return f, nil
	}
	return v, nil
}

func writeFile(c corpus, path string) error {
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetSheetName("Sheet1", c.Sheet); err != nil {
		return err
	}
	st, err := styles(f)
	if err != nil {
		return err
	}
	for i, col := range c.Columns {
		cell, _ := excelize.CoordinatesToCellName(i+1, 1)
		if err := f.SetCellStr(c.Sheet, cell, col.Name); err != nil {
			return err
		}
	}
	for r, row := range c.Rows {
		for i, v := range row {
			kind := c.Columns[i].Type
			val, err := value(kind, v)
			if err != nil || val == nil {
				if err != nil {
					return err
				}
				continue
			}
			cell, _ := excelize.CoordinatesToCellName(i+1, r+2)
			if kind == "text" {
				err = f.SetCellStr(c.Sheet, cell, val.(string)) // a phone keeps its leading zero
			} else {
				err = f.SetCellValue(c.Sheet, cell, val)
			}
			if err != nil {
				return err
			}
			if id, ok := st[kind]; ok {
				if err := f.SetCellStyle(c.Sheet, cell, cell, id); err != nil {
					return err
				}
			}
		}
	}
	return f.SaveAs(path)
}

func writeStream(c corpus, path string) error {
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetSheetName("Sheet1", c.Sheet); err != nil {
		return err
	}
	st, err := styles(f)
	if err != nil {
		return err
	}
	sw, err := f.NewStreamWriter(c.Sheet)
	if err != nil {
		return err
	}
	header := make([]any, len(c.Columns))
	for i, col := range c.Columns {
		header[i] = col.Name
	}
	if err := sw.SetRow("A1", header); err != nil {
		return err
	}
	for r, row := range c.Rows {
		cells := make([]any, len(row))
		for i, v := range row {
			kind := c.Columns[i].Type
			val, err := value(kind, v)
			if err != nil {
				return err
			}
			if id, ok := st[kind]; ok && val != nil {
				val = excelize.Cell{StyleID: id, Value: val}
			}
			cells[i] = val
		}
		cell, _ := excelize.CoordinatesToCellName(1, r+2)
		if err := sw.SetRow(cell, cells); err != nil {
			return err
		}
	}
	if err := sw.Flush(); err != nil {
		return err
	}
	return f.SaveAs(path)
}

// version is the excelize module version this program was built with.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/xuri/excelize/v2" {
				return d.Version
			}
		}
	}
	return "(unknown)"
}
