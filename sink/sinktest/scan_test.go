package sinktest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzScanObject checks the bulkinsert scanner against encoding/json: the same inputs are
// accepted, and every member has the raw text and string value encoding/json sees.
func FuzzScanObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"email":"a@b.no"}`, ` {"a" : 1 , "b":[1,{"c":null}],"d":true,"e":false} `,
		`{"s":"\u00e6\ud83d\ude00\n\"\\\/"}`, `{"s":"\ud800"}`, `{"s":"\ud800\u0041"}`, "{\"s\":\"\xff\"}",
		`{"n":-0.5e+10}`, `{"n":01}`, `{"a":1,"a":2}`, `{"a":}`, `[{}]`, `null`, `{"a":"b"} x`, `{"a":"\x01"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, ok := scanObject(s)
		var want map[string]json.RawMessage
		err := json.Unmarshal([]byte(s), &want)
		wantOK := err == nil && want != nil
		if !ok && wantOK && strings.Count(s, "[")+strings.Count(s, "{") > maxDepth {
			return // deeper than the scanner accepts
		}
		require.Equal(t, wantOK, ok, "accepted by encoding/json: %v (%v)", wantOK, err)
		if !ok {
			return
		}
		got := map[string]member{}
		for _, m := range ms {
			got[m.key] = m
		}
		require.Len(t, got, len(want))
		for k, raw := range want {
			m, found := got[k]
			require.True(t, found, "key %q", k)
			require.Equal(t, string(raw), m.raw, "key %q", k)
			if m.kind == kindString {
				var v string
				require.NoError(t, json.Unmarshal(raw, &v))
				require.Equal(t, v, m.text, "key %q", k)
			}
		}
	})
}

func TestParseBulkCountsRows(t *testing.T) {
	t.Parallel()
	defs := New().st.fieldDefs()
	ups, n, rerr := parseBulk(` [ {"email":"a@example.com"} , {"email":"B@example.com","firstname":"B","firstname":"Bee"} ] `, defs)
	require.Nil(t, rerr)
	require.Equal(t, 2, n)
	require.Equal(t, "b@example.com", ups[1].key)
	require.Equal(t, []fieldKV{{idx: fFirstname, val: "Bee"}}, ups[1].fields, "of duplicate keys the last wins")
	_, n, rerr = parseBulk(`[{"email":"x"},{"email":"a@example.com"},{}]`, defs)
	require.Equal(t, 3, n, "a refused body still reports its rows")
	require.Equal(t, `row 0: invalid email "x"`, rerr.Error())
}
