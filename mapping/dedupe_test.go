package mapping

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/sink"
)

func TestDeduper(t *testing.T) {
	t.Parallel()
	rows := []Row{
		{Ordinal: 1, Line: 2, Sub: sink.Subscriber{Email: "a@b.no", Firstname: "A1"}},
		{Ordinal: 2, Line: 3, Sub: sink.Subscriber{Email: "c@d.no"}},
		{Ordinal: 3, Line: 4, Sub: sink.Subscriber{Email: "a@b.no", Firstname: "A2"}},
		{Ordinal: 4, Line: 5, Sub: sink.Subscriber{Email: "a@b.no", Firstname: "A3"}},
	}
	cases := []struct {
		policy   string
		wantSent []string
		wantRej  []int64
	}{
		{DuplicatesLast, []string{"A1", "", "A2", "A3"}, nil},
		{"", []string{"A1", "", "A2", "A3"}, nil},
		{DuplicatesFirst, []string{"A1", ""}, nil},
		{DuplicatesReject, []string{"A1", ""}, []int64{3, 4}},
	}
	for _, tc := range cases {
		d := NewDeduper(tc.policy)
		var sent []string
		var rejected []int64
		for _, r := range rows {
			send, rej := d.Check(r)
			if send {
				sent = append(sent, r.Sub.Firstname)
			}
			if rej != nil {
				rejected = append(rejected, rej.Ordinal)
				require.Equal(t, CodeDuplicateEmail, rej.Code)
				require.Equal(t, "a@b.no", rej.Value)
				require.Equal(t, r.Line, rej.Line)
			}
		}
		require.Equal(t, tc.wantSent, sent, "policy %q: rows sent", tc.policy)
		require.Equal(t, tc.wantRej, rejected, "policy %q: rejects", tc.policy)
		require.Equal(t, int64(2), d.Duplicates(), "policy %q: duplicates counted", tc.policy)
		require.Equal(t, 2, d.Len())
	}
}

func TestMapperDeduperNamesTheEmailColumn(t *testing.T) {
	t.Parallel()
	m := mustCompile(t, "duplicates = \"reject\"\ncolumns = { Navn = \"firstname\", \"E-post\" = \"email\" }", []string{"Navn", "E-post"}, Fields{})
	d := m.NewDeduper()
	_, rej := d.Check(Row{Sub: sink.Subscriber{Email: "a@b.no"}})
	require.Nil(t, rej)
	_, rej = d.Check(Row{Line: 9, Sub: sink.Subscriber{Email: "a@b.no"}})
	require.Equal(t, &Reject{Line: 9, Column: "E-post", Value: "a@b.no", Code: CodeDuplicateEmail, Message: "the e-mail address is on an earlier row too"}, rej)
}

func TestDeduperObserveForResume(t *testing.T) {
	t.Parallel()
	d := NewDeduper(DuplicatesFirst)
	require.False(t, d.Observe("a@b.no"))
	require.True(t, d.Observe("a@b.no"))
	send, _ := d.Check(Row{Sub: sink.Subscriber{Email: "a@b.no"}})
	require.False(t, send, "an address replayed with Observe counts as seen")
}

// TestDeduperGrowsInSteps: the set of a run's e-mails grows with the run (11 to 21 bytes an
// address), and growing never holds a copy of the whole set beside the new one. Not
// parallel: it counts the bytes the process allocates.
func TestDeduperGrowsInSteps(t *testing.T) {
	const n = 400_000
	emails := make([]string, n)
	for i := range emails {
		emails[i] = fmt.Sprintf("p%d@example.com", i)
	}
	d := NewDeduper(DuplicatesLast)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	last := ms.TotalAlloc
	for i, e := range emails {
		require.False(t, d.Observe(e))
		if i%500 == 499 {
			runtime.ReadMemStats(&ms)
			grew := ms.TotalAlloc - last
			last = ms.TotalAlloc
			if i >= 50_000 {
				require.Less(t, grew, uint64(4*(i+1)), "bytes allocated by the 500 adds up to %d", i+1)
			}
		}
	}
	require.Equal(t, n, d.Len())
}
