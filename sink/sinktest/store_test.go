package sinktest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStdFieldCoversEveryName(t *testing.T) {
	t.Parallel()
	for i, name := range stdFieldNames {
		idx, ok := stdField(name)
		require.True(t, ok, name)
		require.Equal(t, i, idx, name)
		require.Equal(t, name, fieldName(idx))
	}
	_, ok := stdField("email")
	require.False(t, ok)
	require.Equal(t, "EXTRA12", fieldName(fieldExtraBase+12))
	n, ok := parseSlot("EXTRA12")
	require.True(t, ok)
	require.Equal(t, 12, n)
	for _, bad := range []string{"EXTRA", "EXTRA0", "EXTRA01", "EXTRA-1", "extra1", "EXTRA1x"} {
		_, ok := parseSlot(bad)
		require.False(t, ok, bad)
	}
}

func TestMergeFields(t *testing.T) {
	t.Parallel()
	var mg merger
	cur := mg.merge("", []fieldKV{{fFirstname, "Ann"}, {fCity, "Oslo"}, {fieldExtraBase + 300, "x"}})
	require.Equal(t, []fieldKV{{fFirstname, "Ann"}, {fCity, "Oslo"}, {fieldExtraBase + 300, "x"}}, decodeFields(nil, cur))
	same := mg.merge(cur, []fieldKV{{fCity, "Oslo"}})
	require.Equal(t, cur, same)
	next := mg.merge(cur, []fieldKV{{fLastname, "Lee"}, {fCity, "Bergen"}})
	require.Equal(t, []fieldKV{{fFirstname, "Ann"}, {fLastname, "Lee"}, {fCity, "Bergen"}, {fieldExtraBase + 300, "x"}}, decodeFields(nil, next))
	require.Equal(t, "Bergen", lookupField(next, fCity))
	require.Equal(t, "", lookupField(next, fPhone))
}
