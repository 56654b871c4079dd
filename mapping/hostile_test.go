package mapping

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHostileSpecRefusedBeforeParsing: a mapping over 1 MiB, or nested deeper, or with a key
// of more dotted parts, than any real mapping, is refused before the TOML parser sees it.
func TestHostileSpecRefusedBeforeParsing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.toml")
	require.NoError(t, os.WriteFile(path, []byte("[columns]\nEmail = \"email\"\n# "+strings.Repeat("x", 1<<20)+"\n"), 0o600))
	_, err := LoadSpec(path)
	require.ErrorContains(t, err, "over 1048576 bytes")
	require.ErrorContains(t, err, path)

	_, err = ParseSpec([]byte("[columns]\nEmail = \"email\"\nx = " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n"))
	require.ErrorContains(t, err, "line 3: arrays and inline tables nested deeper than 32")

	// A key or a table header of many dotted parts: the parser's memory grows with their square.
	_, err = ParseSpec([]byte("[columns]\nEmail = \"email\"\n" + strings.Repeat("a.", 2000) + "a = 1\n"))
	require.ErrorContains(t, err, "line 3: a key or table name of 2001 dotted parts")
	_, err = ParseSpec([]byte("[columns]\nEmail = \"email\"\n[" + strings.Repeat("a.", 2000) + "a]\n"))
	require.ErrorContains(t, err, "line 3: a key or table name of 2001 dotted parts")
}
