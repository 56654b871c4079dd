package sources

import (
	"slices"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/subsync/subsync/internal/check"
)

// What the SQL source (sql.go) and the SQL write (sqlwrite.go) share: which drivers they
// accept and how a configured driver name becomes a connection. A DSN is a secret: both
// pass every error through secret.ScrubDSN.

// Drivers are the database drivers a sql source and a sql write accept: pgx, postgres and
// postgresql (Postgres through pgx), mysql (MySQL, MariaDB) and sqlite.
var Drivers = []string{"pgx", "postgres", "postgresql", "mysql", "sqlite"}

// CheckDriver reports, as a problem of field, a driver that is missing or not one of Drivers.
func CheckDriver(p *check.Problems, field, driver string) {
	switch {
	case driver == "":
		p.Add(field, "", "missing: pgx (Postgres), mysql (MySQL, MariaDB) or sqlite")
	case !slices.Contains(Drivers, driver):
		p.Add(field, driver, "want pgx (Postgres), mysql (MySQL, MariaDB) or sqlite")
	}
}

// isPostgres reports whether a configured driver name means Postgres.
func isPostgres(driver string) bool {
	switch driver {
	case "pgx", "postgres", "postgresql":
		return true
	}
	return false
}

// databaseSQLDriver is the database/sql driver registered for a configured driver name.
func databaseSQLDriver(driver string) string {
	if isPostgres(driver) {
		return "pgx"
	}
	return driver
}
