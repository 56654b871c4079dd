package tomlguard_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/internal/tomlguard"
)

func TestCheck(t *testing.T) {
	t.Parallel()
	deep := "a = " + strings.Repeat("{b = ", 40) + "1" + strings.Repeat("}", 40) + "\n"
	tests := []struct{ name, data, wantErr string }{
		{"plain", "[api]\nbase_url = \"https://x\"\ntags = [[1, 2], [3]]\n", ""},
		{"brackets in strings and comments", "a = \"[[[[{{{{\" # {{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{\nb = '''\n" + strings.Repeat("[", 100) + "\n'''\n", ""},
		{"deep inline tables", "x = 1\n" + deep, "line 2: arrays and inline tables nested deeper than 32"},
		{"deep arrays", strings.Repeat("[", 33), "nested deeper than 32"},
		{"over 1 MiB", "# " + strings.Repeat("x", tomlguard.MaxBytes), "over 1048576 bytes"},
		{"real keys", "[syncs.kontakter.source]\npath = \"a.b.c\"\n[[syncs]]\n\"a.b\" . 'c' = 1.5\nx = {a.b = [1, 2], c = 3}\n" +
			strings.Repeat("k.", 31) + "k = 1\n", ""},
		{"long dotted key", "x = 1\n" + strings.Repeat("a.", 20000) + "a = 1\n", "line 2: a key or table name of 20001 dotted parts, over the 32"},
		{"long header", "x = 1\n[" + strings.Repeat("a.", 20000) + "a]\n", "line 2: a key or table name of 20001 dotted parts"},
		{"long array table header", "[[" + strings.Repeat("a . ", 33) + "a]]\n", "line 1: a key or table name of 34 dotted parts"},
		{"long quoted key", strings.Repeat(`"a".`, 40) + "'a' = 1\n", "line 1: a key or table name of 41 dotted parts"},
		{"long key in an inline table", "x = {b = 1, " + strings.Repeat("a.", 40) + "a = 1}\n", "line 1: a key or table name of 41"},
		{"long key on an inline table's line", "x = {\n" + strings.Repeat("a.", 40) + "a = 1}\n", "line 2: a key or table name of 41"},
		{"too many keys", strings.Repeat("k = 1\n", tomlguard.MaxKeys+1), "line 100001: over 100000 keys"},
	}
	for _, tt := range tests {
		err := tomlguard.Check([]byte(tt.data))
		if tt.wantErr == "" {
			require.NoError(t, err, tt.name)
		} else {
			require.ErrorContains(t, err, tt.wantErr, tt.name)
		}
	}
	_, err := tomlguard.Read(strings.NewReader(strings.Repeat("x", tomlguard.MaxBytes+1)))
	require.ErrorContains(t, err, "over 1048576 bytes")
}
