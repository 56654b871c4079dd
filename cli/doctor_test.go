package cli

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
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
