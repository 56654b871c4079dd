package sources_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sources"
)

// TestSQLStableOrder: a Stable read of a query is read in the same order however the database stores its
// rows: by the key column when one is given (OrderBy), then by the whole row, so which of
// two rows for one address wins and the line each is reported at do not change between runs.
// The rows are written out of key order, and one is updated (Postgres moves an updated row
// to the end of its table).
func TestSQLStableOrder(t *testing.T) {
	t.Parallel()
	for _, b := range sqlBackends {
		t.Run(b.driver, func(t *testing.T) {
			t.Parallel()
			db, dsn := b.db(t)
			b.exec(t, db, "CREATE TABLE contacts (email VARCHAR(100), crm_id INTEGER, note VARCHAR(100))")
			b.exec(t, db, "INSERT INTO contacts VALUES ('b@x.no', 3, 'x'), ('c@x.no', 1, 'x'), ('a@x.no', 2, 'x'), ('a@x.no', 2, 'w'), ('d@x.no', 1, 'a')")
			b.exec(t, db, "UPDATE contacts SET note = 'y' WHERE crm_id = 3")
			query := "SELECT email, crm_id, note FROM contacts"
			read := func(orderBy string) []row {
				return readAll(t, openSQL(t, sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: query, Stable: true, OrderBy: orderBy}))
			}
			// By the key (named in any case), then by the whole row.
			require.Equal(t, []row{
				{line: 1, values: []string{"c@x.no", "1", "x"}},
				{line: 2, values: []string{"d@x.no", "1", "a"}},
				{line: 3, values: []string{"a@x.no", "2", "w"}},
				{line: 4, values: []string{"a@x.no", "2", "x"}},
				{line: 5, values: []string{"b@x.no", "3", "y"}},
			}, read("CRM_ID"))
			// No key: by the whole row.
			require.Equal(t, []row{
				{line: 1, values: []string{"a@x.no", "2", "w"}},
				{line: 2, values: []string{"a@x.no", "2", "x"}},
				{line: 3, values: []string{"b@x.no", "3", "y"}},
				{line: 4, values: []string{"c@x.no", "1", "x"}},
				{line: 5, values: []string{"d@x.no", "1", "a"}},
			}, read(""))
			// A key the query lacks orders nothing by it (the mapping reports the column).
			require.Len(t, read("missing"), 5)
			// With a watermark: by the watermark column, then the key, then the row.
			r := openSQL(t, sources.SQLOptions{Driver: b.driver, DSN: dsn, Query: "SELECT note, crm_id, email FROM contacts",
				WatermarkColumn: "note", Watermark: "a", Stable: true, OrderBy: "crm_id"})
			require.Equal(t, []row{
				{line: 1, values: []string{"w", "2", "a@x.no"}},
				{line: 2, values: []string{"x", "1", "c@x.no"}},
				{line: 3, values: []string{"x", "2", "a@x.no"}},
				{line: 4, values: []string{"y", "3", "b@x.no"}},
			}, readAll(t, r))
		})
	}
}
