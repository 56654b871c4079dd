package sources_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/subsync/subsync/sources"
)

// Reading a source: Open picks the reader from the config, Next yields records until
// io.EOF, and a *RowError names a row that could not be read while the rest flows.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "kunder.csv")
	// Saved by Excel on a Norwegian Windows: Windows-1252, semicolons, CRLF.
	_ = os.WriteFile(path, []byte("E-post;Navn;Postnr\r\nola@example.no;Ola Nordmann;0150\r\nkari@example.no;Kari\r\n;;\r\nper@example.no;\"Per \xc5s\";9008\r\n"), 0o600)

	ctx := context.Background()
	r, err := sources.Open(ctx, sources.Config{Path: path})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	fmt.Println("header:", r.Header())
	for {
		rec, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		var rowErr *sources.RowError
		if errors.As(err, &rowErr) {
			fmt.Println("reject:", rowErr)
			continue
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(rec.Ordinal, rec.Line, rec.Values)
	}
	fmt.Println("rows:", r.Progress().Rows)
	// Output:
	// header: [E-post Navn Postnr]
	// 1 2 [ola@example.no Ola Nordmann 0150]
	// reject: line 3 column 3: has 2 fields, the header has 3
	// 3 5 [per@example.no Per Ås 9008]
	// rows: 3
}

// An incremental read of a SQL source: store Watermark after a successful run and pass it
// to the next one, which reads only the rows changed since.
func ExampleSQLReader_Watermark() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	dsn := filepath.Join(dir, "crm.db")
	db := mustSQLite(dsn)
	defer db.Close()
	_, _ = db.Exec(`CREATE TABLE contacts (email TEXT, updated_at DATETIME)`)
	_, _ = db.Exec(`INSERT INTO contacts VALUES ('ola@example.no', '2024-01-01 10:00:00'), ('kari@example.no', '2024-01-02 10:00:00')`)

	read := func(watermark string) string {
		r, err := sources.OpenSQL(context.Background(), sources.SQLOptions{
			Driver: "sqlite", DSN: dsn,
			Query:           "SELECT email, updated_at FROM contacts",
			WatermarkColumn: "updated_at", Watermark: watermark,
		})
		if err != nil {
			fmt.Println(err)
			return watermark
		}
		defer r.Close()
		for {
			rec, err := r.Next(context.Background())
			if err != nil {
				break
			}
			fmt.Println(rec.Values)
		}
		return r.Watermark()
	}
	wm := read("")
	fmt.Println("watermark:", wm)
	_, _ = db.Exec(`UPDATE contacts SET updated_at = '2024-01-03 08:00:00' WHERE email = 'ola@example.no'`)
	fmt.Println("watermark:", read(wm))
	// Output:
	// [ola@example.no 2024-01-01T10:00:00]
	// [kari@example.no 2024-01-02T10:00:00]
	// watermark: 2024-01-02T10:00:00
	// [ola@example.no 2024-01-03T08:00:00]
	// watermark: 2024-01-03T08:00:00
}

func mustSQLite(dsn string) *sql.DB {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		panic(err)
	}
	return db
}
