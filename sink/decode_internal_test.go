package sink

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseTime(t *testing.T) {
	t.Parallel()
	want := time.Date(2024, 3, 1, 9, 5, 7, 0, time.UTC)
	wantMS := want.Add(123 * time.Millisecond)
	cases := []struct {
		in   string
		want time.Time
	}{
		{"2024-03-01T09:05:07.123Z", wantMS},
		{"2024-03-01T09:05:07Z", want},
		{"2024-03-01T10:05:07.123+01:00", wantMS},
		{"2024-03-01T09:05:07.123", wantMS},
		{"2024-03-01T09:05:07", want},
		{"2024-03-01 09:05:07", want},
		{"2024-03-01 09:05:07.123", wantMS},
		{"2024-03-01T11:05:07+0200", want},
		{" 2024-03-01 ", time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tc := range cases {
		got, err := parseTime(tc.in)
		require.NoError(t, err, tc.in)
		require.True(t, tc.want.Equal(got), "parseTime(%q) = %v, want %v", tc.in, got, tc.want)
		require.Equal(t, time.UTC, got.Location())
	}
	for _, bad := range []string{"", "yesterday", "01.03.2024", "2024-02-30"} {
		_, err := parseTime(bad)
		require.Error(t, err, bad)
	}
	require.Equal(t, "2024-03-01T09:05:07.123Z", formatTime(wantMS.In(time.FixedZone("X", 7200))))
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	cases := map[string]time.Duration{
		"":                              0,
		"0":                             0,
		"-3":                            0,
		"7":                             7 * time.Second,
		" 1.5 ":                         1500 * time.Millisecond,
		"Fri, 01 Mar 2024 09:00:30 GMT": 30 * time.Second,
		"Fri, 01 Mar 2024 08:00:00 GMT": 0,
		"soon":                          0,
	}
	for in, want := range cases {
		require.Equal(t, want, parseRetryAfter(in, now), "Retry-After %q", in)
	}
}

func TestRowHintAndReason(t *testing.T) {
	t.Parallel()
	n, ok := rowHint(`row 3: invalid email "x"`)
	require.True(t, ok)
	require.Equal(t, 3, n)
	_, ok = rowHint("unknown list 4")
	require.False(t, ok)
	_, ok = rowHint("arrow 5 broken")
	require.False(t, ok)
	require.Equal(t, `invalid email "x"`, rejectReason(&APIError{Message: `row 0: invalid email "x"`}))
	require.Equal(t, "refused by the service (422)", rejectReason(&APIError{StatusCode: 422, Status: "422 Unprocessable entity"}))
	require.Equal(t, "refused by the service (413)", rejectReason(&APIError{StatusCode: 413}))
	code, ok := leadingCode("422 Unprocessable entity")
	require.True(t, ok)
	require.Equal(t, 422, code)
	_, ok = leadingCode("Success")
	require.False(t, ok)
}

func TestUnwrapArray(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`[1,2]`:                          `[1,2]`,
		` {"changes":[1],"total":1}`:     `[1]`,
		`{"data":[1],"errors":[],"n":2}`: `[1]`,
		`{"x":[3]}`:                      `[3]`,
	} {
		got, err := unwrapArray([]byte(in))
		require.NoError(t, err, in)
		require.JSONEq(t, want, string(got), in)
	}
	for _, in := range []string{`{"a":1}`, `{"a":[1],"b":[2]}`, `"x"`} {
		_, err := unwrapArray([]byte(in))
		require.Error(t, err, in)
	}
}
