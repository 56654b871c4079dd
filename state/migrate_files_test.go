package state

import (
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }

	m, err := loadMigrations(fstest.MapFS{
		"migrations/sqlite/012_b.up.sql":   file("-- second\nCREATE TABLE b (x INTEGER);\n"),
		"migrations/postgres/012_b.up.sql": file("-- second\nCREATE TABLE b (x BIGINT);\n"),
		"migrations/sqlite/003_a.up.sql":   file("-- first\nCREATE TABLE a (x INTEGER);\n"),
		"migrations/postgres/003_a.up.sql": file("-- first\nCREATE TABLE a (x BIGINT);\n"),
	})
	require.NoError(t, err)
	require.Equal(t, []migration{
		{version: 3, name: "first", sqlite: "CREATE TABLE a (x INTEGER);\n", postgres: "CREATE TABLE a (x BIGINT);\n"},
		{version: 12, name: "second", sqlite: "CREATE TABLE b (x INTEGER);\n", postgres: "CREATE TABLE b (x BIGINT);\n"},
	}, m)

	for name, fsys := range map[string]fstest.MapFS{
		"one dialect only": {
			"migrations/sqlite/003_a.up.sql":   file("-- a\nSELECT 1;\n"),
			"migrations/postgres/004_a.up.sql": file("-- a\nSELECT 1;\n"),
		},
		"no name line": {
			"migrations/sqlite/003_a.up.sql":   file("SELECT 1;\n"),
			"migrations/postgres/003_a.up.sql": file("-- a\nSELECT 1;\n"),
		},
		"two digits": {
			"migrations/sqlite/03_a.up.sql":   file("-- a\nSELECT 1;\n"),
			"migrations/postgres/03_a.up.sql": file("-- a\nSELECT 1;\n"),
		},
		"two files of a version": {
			"migrations/sqlite/003_a.up.sql":   file("-- a\nSELECT 1;\n"),
			"migrations/sqlite/003_b.up.sql":   file("-- b\nSELECT 1;\n"),
			"migrations/postgres/003_a.up.sql": file("-- a\nSELECT 1;\n"),
		},
	} {
		_, err := loadMigrations(fsys)
		require.Error(t, err, name)
		t.Logf("%s: %v", name, err)
	}
}

func TestEmbeddedMigrationsLoad(t *testing.T) {
	t.Parallel()
	require.NotEmpty(t, migrations)
	require.Equal(t, 1, migrations[0].version)
}
