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
