package config_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/config"
)

// TestHostileFilesRefusedBeforeParsing: a configuration over 1 MiB, or one whose inline tables
// nest deeper, or whose key or table header has more dotted parts, than any real configuration
// (the shapes that make the TOML parser take gigabytes), is a configuration error naming the file, refused before parsing.
func TestHostileFilesRefusedBeforeParsing(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ body, want string }{
		"over 1 MiB": {"[worker]\nconcurrency = 2\n# " + strings.Repeat("x", 1<<20) + "\n", "over 1048576 bytes"},
		"dotted key": {"[worker]\nconcurrency = 2\n" + strings.Repeat("a.", 2000) + "a = 1\n", "line 3: a key or table name of 2001 dotted parts"},
		"header":     {"[worker]\nconcurrency = 2\n[" + strings.Repeat("a.", 2000) + "a]\n", "line 3: a key or table name of 2001 dotted parts"},
		"nested":     {"[worker]\nconcurrency = 2\nx = " + strings.Repeat("{a = ", 200) + "1" + strings.Repeat("}", 200) + "\n", "line 3: arrays and inline tables nested deeper than 32"},
	} {
		path := write(t, tc.body)
		_, err := config.Load(path, creds)
		var cerr *config.Error
		require.ErrorAs(t, err, &cerr, name)
		require.ErrorContains(t, err, tc.want, name)
		require.True(t, strings.HasPrefix(err.Error(), path), name)
	}
}
