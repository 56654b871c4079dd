package sources

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql" // the "mysql" database/sql driver (MySQL, MariaDB)
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/subsync/subsync/internal/secret"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver
)

// SQLOptions says which rows a SQLReader reads.
type SQLOptions struct {
	// Driver is "pgx" (also "postgres", "postgresql": Postgres through pgx), "mysql"
	// (MySQL, MariaDB), "sqlite", or the name of any other registered database/sql driver.
	Driver string
	// DSN is the connection string. It is a secret: it never appears in errors.
	DSN string
	// Query is the SELECT that reads the contacts; its column names are the header.
	Query string
	// WatermarkColumn makes a read incremental. It names a column of Query's result whose
	// values grow as rows change: an updated_at timestamp or an increasing id. The reader
	// then runs
	//
	//	SELECT * FROM (<Query>) AS subsync_q [WHERE subsync_q.<column> > <Watermark>] ORDER BY subsync_q.<column>
	//
	// with the watermark as a query parameter ($1 for Postgres, ? for the others), so the
	// user writes Query without it. After the last row, [SQLReader.Watermark] holds the
	// largest value read: store it once the run has succeeded and pass it back next time.
	//
	// The comparison is the database's own: Postgres casts the parameter to the column's
	// type; MySQL compares dates and numbers as such; SQLite compares a column declared
	// DATE, DATETIME or TIMESTAMP with julianday(), so any ISO layout works, and an INTEGER
	// column as a number. Rows whose column is NULL are read by a full run only. A row
	// committed late with a value below the watermark is missed: give the column a value
	// at commit time (a trigger) or run a full sync now and then.
	WatermarkColumn string
	// Watermark is the largest value of WatermarkColumn seen by the last successful run, as
	// Watermark returned it; "" reads all rows.
	Watermark string
	// Stable reads the rows in a stable order, whatever order the database keeps them in
	// (Postgres moves an updated row, a plan can change): the query is nested as
	//
	//	SELECT * FROM (<Query>) AS subsync_q ORDER BY [<WatermarkColumn>,] [<OrderBy>,] <the whole row>
	//
	// the whole row being every column in turn (MySQL, SQLite) or the row's text (Postgres),
	// so that which of two rows for one address wins and each row's Record.Line are the same
	// in every run over the same data. Query's own ORDER BY is overridden. The database
	// sorts the whole result before the first row comes. Without Stable (and without a
	// watermark) the rows come in the query's own order.
	Stable bool
	// OrderBy names the key column of Query's result (the one mapped to external_id) that a
	// Stable read orders by first, found as WatermarkColumn is; "" or a name the result
	// lacks: none.
	OrderBy string
}

// SQLReader streams the rows of a query. It implements [Reader]; Record.Line is the
// 1-based row number of the result. Values are text: dates "2024-01-31", timestamps
// "2024-01-31T13:45:00" (with a time zone: in UTC, "2024-01-31T12:45:00Z"), numerics exact
// ("1234.50"), booleans "true"/"false" (MySQL and SQLite store them as 1/0), NULL "".
//
// The query must be one SELECT (or WITH … SELECT) statement: [CheckReadQuery] refuses
// anything else before it is sent. It also runs in a read-only transaction (for SQLite, on a
// connection with PRAGMA query_only), so a query that writes fails; on MySQL and MariaDB a
// read-only transaction does not stop DDL, which is why the check and a read-only database
// user matter. Rows are streamed from the server as
// Next is called; the result is never held in memory. Next's ctx cancels the query.
type SQLReader struct {
	src    rowSource
	cancel context.CancelFunc
	header []string
	wmCol  int // index of the watermark column, -1 without one
	wm     string

	line     int
	read     atomic.Int64
	err      error
	closeErr error // from ending the transaction at the end of the rows
	closed   bool
	done     bool
}

// rowSource is one backend's result set.
type rowSource interface {
	// next advances to the next row; false at the end or on an error (see err).
	next() bool
	// values turns the current row into text; a cell that cannot be turned into text is an
	// error naming its 0-based column.
	values() ([]string, int, error)
	err() error
	// abort stops the query on the server before close, when the rows are not all read.
	abort()
	close() error
}

// OpenSQL connects, begins a read-only transaction and starts the query. The header is
// the query's column names.
func OpenSQL(ctx context.Context, opts SQLOptions) (*SQLReader, error) {
	r, err := openSQL(ctx, opts)
	if err != nil {
		never := neverSucceeds(err)
		err = secret.ScrubDSN(err, opts.Driver, opts.DSN)
		if never && !errors.Is(err, ErrQueryNeverSucceeds) {
			err = fmt.Errorf("%w: %w", ErrQueryNeverSucceeds, err)
		}
		return nil, fmt.Errorf("open sql source (driver %s): %w", opts.Driver, err)
	}
	return r, nil
}

func openSQL(ctx context.Context, opts SQLOptions) (_ *SQLReader, err error) {
	switch {
	case opts.Driver == "":
		return nil, errors.New("driver: missing (pgx, mysql or sqlite)")
	case opts.DSN == "":
		return nil, errors.New("dsn: missing")
	case strings.TrimSpace(opts.Query) == "":
		return nil, errors.New("query: missing")
	case opts.Watermark != "" && opts.WatermarkColumn == "":
		return nil, errors.New("a watermark is given without a watermark column")
	}
	// Before connecting: a query that is not one read is never sent.
	if err := CheckReadQuery(opts.Driver, opts.Query); err != nil {
		return nil, err
	}
	r := &SQLReader{wmCol: -1, wm: opts.Watermark}
	// The query lives until Close; each Next's ctx can cancel it (see Next).
	qctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	defer func() {
		if err != nil {
			_ = r.Close()
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
		}
	}()
	var names []string
	if isPostgres(opts.Driver) {
		var src *pgxSource
		if src, names, err = openPgx(qctx, opts); err != nil {
			return nil, err
		}
		r.src = src
	} else {
		var src *dbSource
		if src, names, err = openDatabaseSQL(qctx, opts); err != nil {
			return nil, err
		}
		r.src = src
	}
	if r.header, err = normalizeHeader(names); err != nil {
		return nil, err
	}
	if opts.WatermarkColumn != "" {
		if r.wmCol = columnIndex(names, opts.WatermarkColumn); r.wmCol < 0 {
			return nil, fmt.Errorf("watermark column %q is not a column of the query (%s)", opts.WatermarkColumn, quoteList(names))
		}
	}
	return r, nil
}

// watermarkColumn finds the watermark column among the query's columns and returns it
// quoted for the nested query, as the query spells it.
func watermarkColumn(opts SQLOptions, names []string) (string, error) {
	i := columnIndex(names, opts.WatermarkColumn)
	if i < 0 {
		return "", fmt.Errorf("watermark column %q is not a column of the query (%s)", opts.WatermarkColumn, quoteList(names))
	}
	return "subsync_q." + dialectOf(opts.Driver).quote(names[i]), nil
}

// columnIndex finds a column by its exact name, or else case-insensitively.
func columnIndex(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	for i, n := range names {
		if strings.EqualFold(n, name) {
			return i
		}
	}
	return -1
}

// dialect is how one database spells the watermark query.
type dialect struct {
	quote       func(string) string
	placeholder string
}

func dialectOf(driver string) dialect {
	switch {
	case isPostgres(driver):
		return dialect{quote: quoteWith(`"`), placeholder: "$1"}
	case driver == "mysql":
		return dialect{quote: quoteWith("`"), placeholder: "?"}
	}
	return dialect{quote: quoteWith(`"`), placeholder: "?"}
}

func quoteWith(q string) func(string) string {
	return func(id string) string { return q + strings.ReplaceAll(id, q, q+q) + q }
}

// trimQuery drops white space and semicolons at the end of a query, so it can be nested.
func trimQuery(q string) string {
	return strings.TrimRight(strings.TrimSpace(q), "; \t\r\n")
}

// watermarkQuery nests the user's query for an incremental read. cond is the comparison
// with the watermark, "" for a full read.
func watermarkQuery(query, orderBy, cond string) string {
	q := "SELECT * FROM (" + trimQuery(query) + "\n) AS subsync_q"
	if cond != "" {
		q += " WHERE " + cond
	}
	return q + " ORDER BY " + orderBy
}

// --- Postgres through pgx ---------------------------------------------------------------

type pgxSource struct {
	conn   *pgx.Conn
	tx     pgx.Tx
	rows   pgx.Rows
	fields []pgconn.FieldDescription
}

func openPgx(ctx context.Context, opts SQLOptions) (*pgxSource, []string, error) {
	conn, err := pgx.Connect(ctx, opts.DSN)
	if err != nil {
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	s := &pgxSource{conn: conn}
	if s.tx, err = conn.BeginTx(ctx, pgx.TxOptions{AccessMode: pgx.ReadOnly}); err != nil {
		_ = s.close()
		return nil, nil, fmt.Errorf("begin read-only transaction: %w", err)
	}
	query, args := opts.Query, []any(nil)
	if opts.Stable || opts.WatermarkColumn != "" {
		if query, args, err = s.stableQuery(ctx, opts); err != nil {
			_ = s.close()
			return nil, nil, err
		}
	}
	if s.rows, err = s.tx.Query(ctx, query, args...); err != nil {
		_ = s.close()
		return nil, nil, fmt.Errorf("query: %w", err)
	}
	s.fields = s.rows.FieldDescriptions()
	if len(s.fields) == 0 {
		// No result set: an error the server sends with the first row, or a statement
		// that returns nothing.
		s.rows.Next()
		err := s.rows.Err()
		_ = s.close()
		if err != nil {
			return nil, nil, fmt.Errorf("query: %w", err)
		}
		return nil, nil, errors.New("query: it returns no columns")
	}
	names := make([]string, len(s.fields))
	for i, f := range s.fields {
		names[i] = f.Name
	}
	return s, names, nil
}

// stableQuery is opts.Query nested to be read in a stable order (see SQLOptions.OrderBy),
// from an incremental read's watermark on when there is one. It asks the database the
// query's columns first (running it with WHERE false).
func (s *pgxSource) stableQuery(ctx context.Context, opts SQLOptions) (string, []any, error) {
	probe, err := s.tx.Query(ctx, watermarkQuery(opts.Query, "1", "false"))
	if err != nil {
		return "", nil, fmt.Errorf("query: %w", err)
	}
	var names []string
	for _, f := range probe.FieldDescriptions() {
		names = append(names, f.Name)
	}
	probe.Close()
	if err := probe.Err(); err != nil {
		return "", nil, fmt.Errorf("query: %w", err)
	}
	var by []string
	cond, args := "", []any(nil)
	if opts.WatermarkColumn != "" {
		col, err := watermarkColumn(opts, names)
		if err != nil {
			return "", nil, err
		}
		by = append(by, col)
		if opts.Watermark != "" {
			// Postgres casts the parameter to the column's type: the text is enough.
			cond, args = col+" > "+dialectOf(opts.Driver).placeholder, []any{opts.Watermark}
		}
	}
	return watermarkQuery(opts.Query, stableOrder(opts, names, by), cond), args, nil
}

// stableOrder is the ORDER BY of the nested query: the columns by (the watermark's), and for
// a Stable read the key column (OrderBy) when the query has it, then the whole row.
func stableOrder(opts SQLOptions, names, by []string) string {
	d := dialectOf(opts.Driver)
	if !opts.Stable {
		return strings.Join(by, ", ") // a watermark's order, as before
	}
	if i := columnIndex(names, opts.OrderBy); opts.OrderBy != "" && i >= 0 {
		by = append(by, "subsync_q."+d.quote(names[i]))
	}
	if isPostgres(opts.Driver) {
		// Any column type has a text form, not every one an order (json, point).
		return strings.Join(append(by, "subsync_q::text"), ", ")
	}
	for i := range names {
		by = append(by, strconv.Itoa(i+1))
	}
	return strings.Join(by, ", ")
}

func (s *pgxSource) next() bool { return s.rows.Next() }

func (s *pgxSource) values() ([]string, int, error) {
	vals, err := s.rows.Values()
	if err != nil {
		return nil, -1, err
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		if out[i], err = pgText(s.fields[i].DataTypeOID, v); err != nil {
			return out, i, err
		}
	}
	return out, -1, nil
}

func (s *pgxSource) err() error { return s.rows.Err() }

// abort does nothing: cancelling the query's context makes pgx send a cancel request and
// give up the connection, so close does not read the rest.
func (s *pgxSource) abort() {}

func (s *pgxSource) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.rows != nil {
		s.rows.Close()
	}
	if s.tx != nil {
		_ = s.tx.Rollback(ctx) // read-only: nothing to keep; fails harmlessly on a broken connection
	}
	return s.conn.Close(ctx)
}

// --- any database/sql driver ------------------------------------------------------------

type dbSource struct {
	db     *sql.DB
	conn   *sql.Conn
	connID int64 // MySQL's id of conn, for KILL QUERY; 0 otherwise
	tx     *sql.Tx
	rows   *sql.Rows
	types  []string
	dest   []any
	ptrs   []any // pointers into dest, for Scan
}

func openDatabaseSQL(ctx context.Context, opts SQLOptions) (*dbSource, []string, error) {
	db, err := sql.Open(databaseSQLDriver(opts.Driver), opts.DSN)
	if err != nil {
		// The driver could not read the DSN: it will not read it better next time.
		return nil, nil, fmt.Errorf("dsn: %w", &invalidDSNError{err})
	}
	s := &dbSource{db: db}
	// One connection, held: the pragma below and the transaction must share it.
	if s.conn, err = db.Conn(ctx); err != nil {
		_ = s.close()
		return nil, nil, fmt.Errorf("connect: %w", err)
	}
	switch opts.Driver {
	case "sqlite":
		// SQLite has no read-only transactions; a read-only connection does the same.
		if _, err := s.conn.ExecContext(ctx, "PRAGMA query_only = ON"); err != nil {
			_ = s.close()
			return nil, nil, fmt.Errorf("connect: %w", err)
		}
	case "mysql":
		// Closing a MySQL result early makes the driver read the rest of it, however
		// long; abort kills the query on the server first.
		if err := s.conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&s.connID); err != nil {
			_ = s.close()
			return nil, nil, fmt.Errorf("connect: %w", err)
		}
	}
	if s.tx, err = s.conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}); err != nil {
		_ = s.close()
		return nil, nil, fmt.Errorf("begin read-only transaction: %w", err)
	}
	query, args := opts.Query, []any(nil)
	if opts.Stable || opts.WatermarkColumn != "" {
		if query, args, err = s.stableQuery(ctx, opts); err != nil {
			_ = s.close()
			return nil, nil, err
		}
	}
	if s.rows, err = s.tx.QueryContext(ctx, query, args...); err != nil {
		_ = s.close()
		return nil, nil, fmt.Errorf("query: %w", err)
	}
	cols, err := s.rows.ColumnTypes()
	if err != nil {
		_ = s.close()
		return nil, nil, fmt.Errorf("query columns: %w", err)
	}
	if len(cols) == 0 {
		_ = s.close()
		return nil, nil, errors.New("query: it returns no columns")
	}
	names := make([]string, len(cols))
	s.types = make([]string, len(cols))
	for i, c := range cols {
		names[i], s.types[i] = c.Name(), strings.ToUpper(c.DatabaseTypeName())
	}
	s.dest = make([]any, len(cols))
	s.ptrs = make([]any, len(cols))
	for i := range s.dest {
		s.ptrs[i] = &s.dest[i]
	}
	return s, names, nil
}

// stableQuery is opts.Query nested to be read in a stable order (see SQLOptions.OrderBy),
// from an incremental read's watermark on when there is one. It asks the database the
// query's columns (running it with WHERE 1=0), and for a watermark its column's type, to pass
// the watermark as a value of that type.
func (s *dbSource) stableQuery(ctx context.Context, opts SQLOptions) (string, []any, error) {
	probe, err := s.tx.QueryContext(ctx, watermarkQuery(opts.Query, "1", "1=0"))
	if err != nil {
		return "", nil, fmt.Errorf("query: %w", err)
	}
	cols, err := probe.ColumnTypes()
	_ = probe.Close()
	if err != nil {
		return "", nil, fmt.Errorf("query columns: %w", err)
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name()
	}
	if opts.WatermarkColumn == "" {
		return watermarkQuery(opts.Query, stableOrder(opts, names, nil), ""), nil, nil
	}
	col, err := watermarkColumn(opts, names)
	if err != nil {
		return "", nil, err
	}
	order := stableOrder(opts, names, []string{col})
	if opts.Watermark == "" {
		return watermarkQuery(opts.Query, order, ""), nil, nil
	}
	typ := strings.ToUpper(cols[columnIndex(names, opts.WatermarkColumn)].DatabaseTypeName())
	n, intErr := strconv.ParseInt(opts.Watermark, 10, 64)
	switch {
	case opts.Driver == "sqlite" && (typ == "DATE" || typ == "DATETIME" || typ == "TIMESTAMP"):
		return watermarkQuery(opts.Query, order, "julianday("+col+") > julianday(?)"), []any{opts.Watermark}, nil
	case intErr == nil && (strings.Contains(typ, "INT") || typ == ""):
		return watermarkQuery(opts.Query, order, col+" > ?"), []any{n}, nil
	}
	return watermarkQuery(opts.Query, order, col+" > ?"), []any{opts.Watermark}, nil
}

func (s *dbSource) next() bool { return s.rows.Next() }

func (s *dbSource) values() ([]string, int, error) {
	clear(s.dest)
	if err := s.rows.Scan(s.ptrs...); err != nil {
		return nil, -1, err
	}
	out := make([]string, len(s.dest))
	for i, v := range s.dest {
		var err error
		if out[i], err = sqlText(s.types[i], v); err != nil {
			return out, i, err
		}
	}
	return out, -1, nil
}

func (s *dbSource) err() error { return s.rows.Err() }

// abort kills a MySQL query from a second connection, so close does not read the rest of
// the result. Other drivers stop when the query's context is cancelled.
func (s *dbSource) abort() {
	if s.connID == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, err := s.db.Conn(ctx); err == nil {
		_, _ = c.ExecContext(ctx, "KILL QUERY "+strconv.FormatInt(s.connID, 10))
		_ = c.Close()
	}
}

func (s *dbSource) close() error {
	if s.rows != nil {
		_ = s.rows.Close()
	}
	if s.tx != nil {
		_ = s.tx.Rollback() // read-only: nothing to keep
	}
	if s.conn != nil {
		_ = s.conn.Close()
	}
	return s.db.Close()
}

// --- the reader -------------------------------------------------------------------------

// Header returns the column names; see the package doc.
func (r *SQLReader) Header() []string { return r.header }

// Watermark returns the largest value of the watermark column read so far (the value of
// the last row, as rows come ordered by it), or the watermark the reader was opened with
// if no row had one. Store it only after the run has read to io.EOF and succeeded.
func (r *SQLReader) Watermark() string { return r.wm }

// Progress reports the rows returned; a query's total is not known in advance.
func (r *SQLReader) Progress() Progress { return Progress{Rows: r.read.Load()} }

// Next returns the next row; see the package doc.
func (r *SQLReader) Next(ctx context.Context) (Record, error) {
	if r.closed {
		return Record{}, ErrClosed
	}
	if r.err != nil {
		return Record{}, r.err
	}
	if err := ctx.Err(); err != nil {
		return Record{}, r.fail(err)
	}
	if ctx.Done() != nil {
		stop := context.AfterFunc(ctx, r.cancel)
		defer stop()
	}
	for {
		if !r.src.next() {
			if err := r.src.err(); err != nil {
				if ctxErr := ctx.Err(); ctxErr != nil {
					return Record{}, r.fail(fmt.Errorf("%w (%w)", ctxErr, err))
				}
				return Record{}, r.fail(err)
			}
			if err := ctx.Err(); err != nil {
				return Record{}, r.fail(err)
			}
			// Done: end the transaction now rather than at Close, so a reader kept open
			// holds no locks (SQLite) and no connection.
			r.done, r.err = true, io.EOF
			r.closeErr = r.src.close()
			r.src = nil
			return Record{}, io.EOF
		}
		r.line++
		vals, col, err := r.src.values()
		if err != nil && col < 0 {
			return Record{}, r.fail(err)
		}
		if r.wmCol >= 0 && r.wmCol < len(vals) && vals[r.wmCol] != "" && (col < 0 || col > r.wmCol) {
			r.wm = vals[r.wmCol]
		}
		if err == nil && allBlank(vals) {
			continue
		}
		rec := Record{Ordinal: r.read.Add(1), Line: r.line, Values: vals}
		if err != nil {
			return rec, &RowError{Line: r.line, Column: col + 1, Err: because(ErrCell, "column %d: %v", col+1, err)}
		}
		// Result columns with blank names at the end were dropped from the header, as a
		// file's are; a value under one is an error.
		for i := len(r.header); i < len(vals); i++ {
			if strings.TrimSpace(vals[i]) != "" {
				return rec, &RowError{Line: r.line, Column: i + 1, Err: because(ErrUnnamedColumn, "column %d has a value but no name", i+1)}
			}
		}
		rec.Values = vals[:len(r.header)]
		return rec, nil
	}
}

func (r *SQLReader) fail(err error) error {
	r.err = fmt.Errorf("read sql source row %d: %w", r.line+1, err)
	return r.err
}

// Close ends the query, the transaction and the connection. It is safe to call twice.
// Closed before the end of the rows, it cancels the query rather than drain the rest.
func (r *SQLReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.src != nil {
		r.cancel() // stop the server sending the rest instead of draining it
		r.src.abort()
		_ = r.src.close()
		r.src = nil
	}
	r.cancel()
	if r.closeErr != nil {
		return fmt.Errorf("close sql source: %w", r.closeErr)
	}
	return nil
}
