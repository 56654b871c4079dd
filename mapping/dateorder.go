package mapping

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/subsync/subsync/sink"
)

// DateOrder is how the order of a date column was decided from the file (see
// Spec.WithDateOrders).
type DateOrder struct {
	Column  string `json:"column"`
	Order   string `json:"order"`             // DateDayFirst or DateMonthFirst; "" undecided
	Reason  string `json:"reason"`            // for a person: what decided it, or why nothing did
	Example string `json:"example,omitempty"` // a value that decided it
}

// dayFirstNames are date columns whose names are in a language whose dates are written day
// first (Norwegian, Swedish, Danish): a hint the file gives where its values do not decide.
var dayFirstNames = []string{"Fødselsdato", "Fødselsdag", "Bursdag", "Födelsedatum", "Födelsedag", "Fodselsdato", "Innmeldt", "Dato", "Datum"}

// WithDateOrders returns s with the date order of its birthday and custom columns that have
// none (neither date_format on the column nor on the mapping) decided from sample (rows
// aligned with header, the first rows of the file): the order that the column's unambiguous
// values show ("5/17/1985" can only be month-first, "17/5/1985" only day-first), by the
// majority of them when they disagree; with none, a column named in a day-first language
// (Fødselsdato, Bursdag …) is day-first. A column neither decides stays undecided: its
// ambiguous values ("3/4/1990") are dropped with a warning (ambiguous_date), never read in a
// guessed order. It also returns what was decided for each such column that holds dates.
func (s Spec) WithDateOrders(header []string, sample [][]string) (Spec, []DateOrder) {
	if s.DateFormat != "" {
		return s, nil
	}
	var out []DateOrder
	cols := maps.Clone(s.Columns)
	for _, name := range sortedKeys(s.Columns) {
		c := s.Columns[name]
		if c.DateFormat != "" || (c.To != sink.FieldBirthday && c.To != TargetCustom) {
			continue
		}
		idx, msg := findColumn(header, name)
		if msg != "" {
			continue // Compile says so
		}
		d := decideOrder(header[idx], sample, idx)
		if d.Reason == "" {
			continue // no date in the sample and no hint: nothing to say
		}
		if d.Order != "" {
			c.DateFormat = d.Order
			cols[name] = c
		}
		out = append(out, d)
	}
	s.Columns = cols
	return s, out
}

// decideOrder decides the order of column idx (named name) from its values in sample.
func decideOrder(name string, sample [][]string, idx int) DateOrder {
	d := DateOrder{Column: name}
	var day, month, ambiguous int
	var dayEx, monthEx string
	for _, row := range sample {
		if idx >= len(row) {
			continue
		}
		v := strings.TrimSpace(row[idx])
		a, b, ok := dayMonth(v)
		switch {
		case !ok:
		case a > 12 && b <= 12:
			day++
			dayEx = cmpOr(dayEx, v)
		case b > 12 && a <= 12:
			month++
			monthEx = cmpOr(monthEx, v)
		case a != b:
			ambiguous++
		}
	}
	switch {
	case day > month:
		d.Order, d.Example = DateDayFirst, dayEx
		d.Reason = fmt.Sprintf("%d of its values can only be day-first, such as %q", day, dayEx)
	case month > day:
		d.Order, d.Example = DateMonthFirst, monthEx
		d.Reason = fmt.Sprintf("%d of its values can only be month-first, such as %q", month, monthEx)
	case slices.ContainsFunc(dayFirstNames, func(n string) bool { return fold(n) == fold(name) }):
		d.Order, d.Reason = DateDayFirst, "its name is Norwegian, Swedish or Danish, where dates are written day first"
	case day > 0:
		d.Reason = fmt.Sprintf("as many of its values are day-first only (%q) as month-first only (%q): set date_format", dayEx, monthEx)
	case ambiguous > 0:
		d.Reason = "none of its values decides between day-first and month-first: set date_format"
	}
	return d
}

// dayMonth reads the first two numbers of a date written a/b/year or a-b-year (the forms
// whose order is open; dotted dates are day first), and reports whether v is one.
func dayMonth(v string) (a, b int, ok bool) {
	var nums [3]int
	var widths [3]int
	n, i := 0, 0
	var sep byte
	for n < 3 {
		start := i
		for i < len(v) && v[i] >= '0' && v[i] <= '9' && i-start < 4 {
			nums[n] = nums[n]*10 + int(v[i]-'0')
			i++
		}
		if i == start {
			return 0, 0, false
		}
		widths[n] = i - start
		n++
		if n == 3 {
			break
		}
		if i == len(v) || (v[i] != '/' && v[i] != '-') || sep != 0 && v[i] != sep {
			return 0, 0, false
		}
		sep = v[i]
		i++
	}
	if widths[0] > 2 || widths[1] > 2 || widths[2] != 2 && widths[2] != 4 {
		return 0, 0, false
	}
	return nums[0], nums[1], true
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
