package mapping

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// mapDates maps the values of a one-date-column file as a run does: the order decided from
// the file's rows, then each row mapped. It returns each row's birthday ("" when dropped)
// and its warning codes.
func mapDates(t *testing.T, spec Spec, values ...string) (orders []DateOrder, birthdays []string, warnings []string) {
	t.Helper()
	header := []string{"Email", "Birthday"}
	if spec.Columns == nil {
		spec, _ = spec.WithAuto(header)
	}
	sample := make([][]string, len(values))
	for i, v := range values {
		sample[i] = []string{"a@b.no", v}
	}
	spec, orders = spec.WithDateOrders(header, sample)
	m, err := compile(spec, header, Fields{}, testToday)
	require.NoError(t, err)
	for i, v := range values {
		var row Row
		var warns []Reject
		require.Nil(t, m.MapWarn(nil, &sources.Record{Line: i + 2, Values: []string{"a@b.no", v}}, &row, &warns), v)
		birthdays = append(birthdays, row.Sub.Birthday)
		for _, w := range warns {
			warnings = append(warnings, w.Code)
		}
	}
	return orders, birthdays, warnings
}

// TestMonthFirstColumn: in a month-first column "3/4/1990" is 4 March, because "5/17/1985" in
// the same column can only be month-first; the order is decided per column, never per value.
func TestMonthFirstColumn(t *testing.T) {
	t.Parallel()
	orders, got, warns := mapDates(t, Spec{}, "3/4/1990", "5/17/1985")
	require.Equal(t, []string{"1990-03-04", "1985-05-17"}, got)
	require.Empty(t, warns)
	require.Equal(t, DateMonthFirst, orders[0].Order)
	require.Contains(t, orders[0].Reason, `1 of its values can only be month-first, such as "5/17/1985"`)

	// The same in a day-first column, and with date_format given.
	_, got, _ = mapDates(t, Spec{}, "3/4/1990", "17/5/1985")
	require.Equal(t, []string{"1990-04-03", "1985-05-17"}, got)
	_, got, _ = mapDates(t, Spec{DateFormat: DateMonthFirst}, "3/4/1990", "4/5/1985")
	require.Equal(t, []string{"1990-03-04", "1985-04-05"}, got)
	spec, err := ParseSpec([]byte("[columns]\nEmail = \"email\"\nBirthday = { to = \"birthday\", date_format = \"day-first\" }\n"))
	require.NoError(t, err)
	_, got, _ = mapDates(t, spec, "3/4/1990")
	require.Equal(t, []string{"1990-04-03"}, got)
}

// TestAmbiguousColumnNeverSwapped: a column of only ambiguous values and no date_format
// yields no date at all: each value is dropped with an ambiguous_date warning, the row sent.
func TestAmbiguousColumnNeverSwapped(t *testing.T) {
	t.Parallel()
	orders, got, warns := mapDates(t, Spec{}, "3/4/1990", "5/6/1985", "11/12/2001", "7/7/1977")
	require.Equal(t, []string{"", "", "", "1977-07-07"}, got, "7/7 reads the same either way")
	require.Equal(t, []string{CodeAmbiguousDate, CodeAmbiguousDate, CodeAmbiguousDate}, warns)
	require.Equal(t, "", orders[0].Order)
	require.Contains(t, orders[0].Reason, "set date_format")

	// Evidence both ways in equal measure decides nothing either.
	_, got, warns = mapDates(t, Spec{}, "13/1/1990", "1/13/1990", "2/3/1990")
	require.Equal(t, []string{"1990-01-13", "1990-01-13", ""}, got)
	require.Equal(t, []string{CodeAmbiguousDate}, warns)

	// A yearless birthday (Google's --07-14) is dropped with a warning: the service takes
	// whole dates only.
	_, got, warns = mapDates(t, Spec{}, "--07-14", "1985-05-17")
	require.Equal(t, []string{"", "1985-05-17"}, got)
	require.Equal(t, []string{CodeYearlessDate}, warns)
}
