package cli

import (
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/testdb"
	"github.com/subsync/subsync/sink/sinktest"
)

// TestDoctorPreparesTheWriteBack: doctor prepares the write-back statement on the source
// database, running nothing: a misspelt column fails with the database's words; the mended
// statement passes, and the table is as it was.
func TestDoctorPreparesTheWriteBack(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	crm := filepath.Join(h.dir, "crm.db")
	db, err := sql.Open("sqlite", crm)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE contacts (email TEXT, status TEXT);
INSERT INTO contacts VALUES (' Ada@Example.com', 'active')`)
	require.NoError(t, err)
	base := mustRead(t, h.config)
	writeBack := func(statement string) {
		h.write(base + fmt.Sprintf(`
[status.write_back]
kind = "sql"
driver = "sqlite"
dsn = %q
statement = %q
`, crm, statement))
	}

	writeBack("UPDATE contacts SET status = :status WHERE lower(trim(emial)) = :email")
	r := h.run("", "doctor")
	require.Equal(t, ExitFailure, r.code, r.stderr)
	require.Regexp(t, `FAIL +the status write-back can run: .*no such column: emial`, r.stdout)

	writeBack("UPDATE contacts SET status = :status WHERE lower(trim(email)) = :email")
	out := h.ok("doctor")
	require.Regexp(t, `ok +the write-back statement prepares on the source database`, out)
	var status string
	require.NoError(t, db.QueryRow("SELECT status FROM contacts").Scan(&status))
	require.Equal(t, "active", status, "doctor runs nothing")
}

// TestDoctorChecksSQLSources (#28 point 7, Done-when): doctor connects to every configured SQL
// source and prepares its query in a read-only transaction: a source whose database does not
// exist (Postgres, and an SQLite file that is not there, which is not created) fails doctor
// with exit 1, naming the source's key; a misspelt column fails; a good one passes and
// nothing is read or written.
func TestDoctorChecksSQLSources(t *testing.T) {
	t.Parallel()
	h := setup(t, "")
	crm := filepath.Join(h.dir, "crm.db")
	db, err := sql.Open("sqlite", crm)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(`CREATE TABLE contacts (email TEXT, status TEXT)`)
	require.NoError(t, err)
	base := mustRead(t, h.config)
	u, err := url.Parse(testdb.PostgresURL(t))
	require.NoError(t, err)
	u.Path = "/" + testdb.Name("subsync_no_such_db")
	missing := filepath.Join(h.dir, "missing.db")
	h.write(base + fmt.Sprintf(`
[sources.crm]
kind = "sql"
driver = "pgx"
dsn = %q
query = "SELECT email FROM contacts"
[sources.local]
kind = "sql"
driver = "sqlite"
dsn = %q
query = "SELECT email FROM contacts"
[sources.typo]
kind = "sql"
driver = "sqlite"
dsn = %q
query = "SELECT emial FROM contacts"
[sources.good]
kind = "sql"
driver = "sqlite"
dsn = %q
query = "SELECT email, status FROM contacts"
`, u.String(), missing, crm, crm))

	r := h.run("", "doctor")
	require.Equal(t, ExitFailure, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Regexp(t, `FAIL +the SQL source sources\.crm can be read: .*does not exist`, r.stdout)
	require.Contains(t, r.stdout, "fix: check sources.crm: its dsn")
	require.Regexp(t, `FAIL +the SQL source sources\.local can be read: .*SQLite file does not exist`, r.stdout)
	require.Regexp(t, `FAIL +the SQL source sources\.typo can be read: .*no such column: emial`, r.stdout)
	require.Regexp(t, `ok +the SQL source sources\.good connects and its query prepares \(driver sqlite\)`, r.stdout)
	require.NoFileExists(t, missing, "doctor creates no database")
	require.Contains(t, r.stdout, "3 problem(s)")
}

// TestDoctorFeedWindow (#28 point 7): doctor reads 30 days of the status feed: a change 20
// days old is read and its shape checked; with no change in the window it says the entries'
// shape was not checked rather than "ok".
func TestDoctorFeedWindow(t *testing.T) {
	t.Parallel()
	var offset atomic.Int64
	clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	h := setup(t, "", sinktest.WithClock(clock))
	list := h.srv.CreateList("Members")
	r := h.run("", "doctor")
	require.Equal(t, ExitOK, r.code, r.stdout)
	require.Regexp(t, `skip +the status feed answers, but showed no change in the last 30 days .*entry shape not checked`, r.stdout)
	require.NotRegexp(t, `ok +the status feed`, r.stdout)

	offset.Store(int64(-20 * 24 * time.Hour))
	h.ok("subscribers", "upsert", "--list", fmt.Sprint(list), "--email", "ada@example.com")
	require.NoError(t, h.srv.SetStatus("ada@example.com", list, "unsubscribed"))
	offset.Store(0)
	require.Regexp(t, `ok +the status feed answers in a shape subsync reads \(1 changes in the last 30 days`, h.ok("doctor"))
}
