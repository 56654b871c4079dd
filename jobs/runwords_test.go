package jobs_test

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
	"github.com/subsync/subsync/sink"
)

// TestRunsInTheirOwnWords: a status pull reads changes and makes requests, an erasure erases
// people, in run history and in the log; a run that completed never carries an error.
func TestRunsInTheirOwnWords(t *testing.T) {
	t.Parallel()

	eachBackend(t, func(t *testing.T, backend string) {
		ctx := context.Background()
		b := setup(t, backend)
		b.subscribe(t, "ada@example.com", "grace@example.com")
		require.NoError(t, b.emu.SetStatus("ada@example.com", b.listID, sink.StatusUnsubscribed))
		rt := b.open(t)

		id, err := rt.EnqueueStatusPull(ctx)
		require.NoError(t, err)
		pull, err := rt.Wait(ctx, id, nil)
		require.NoError(t, err)
		require.EqualValues(t, 1, pull.Counts.Read)
		require.EqualValues(t, 1, pull.Counts.Requests, "the feed's request is counted")
		words := jobs.DescribeRun(pull)
		require.Equal(t, "changes", words.Object)
		require.Equal(t, "1 changes read, 1 recorded", words.Summary())

		id, _, err = rt.RequestForget(ctx, []string{"grace@example.com"})
		require.NoError(t, err)
		erasure, err := rt.Wait(ctx, id, nil)
		require.NoError(t, err)
		require.Equal(t, "erasure", jobs.DescribeRun(erasure).Object)
		require.Equal(t, map[string]int64{"people_erased": 1, "deleted_in_service": 1, "not_in_service": 0, "unmatched": 0},
			jobs.DescribeRun(erasure).Map())

		var pullLine, forgetLine string
		for _, l := range strings.Split(b.logs.String(), "\n") {
			if !strings.Contains(l, `msg="run completed"`) {
				continue
			}
			switch {
			case strings.Contains(l, "kind=status_pull"):
				pullLine = l
			case strings.Contains(l, "kind=forget"):
				forgetLine = l
			}
		}
		require.Regexp(t, `read=1 already_known=0 recorded=1 written_back=0 unmatched=0 requests=1 `, pullLine)
		require.NotContains(t, pullLine, " sent=")
		require.Regexp(t, `people_erased=1 deleted_in_service=1 not_in_service=0 `, forgetLine)
		require.Regexp(t, `note="erased 1 person`, forgetLine)
		for _, l := range []string{pullLine, forgetLine} {
			require.NotRegexp(t, regexp.MustCompile(` error=`), l, "a run that completed has no error")
		}
	})
}
