package jobs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subsync/subsync/jobs"
)

// A schedule is said in words beside its cron spec on the pages.
func TestDescribeSchedule(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"30 2 * * *":      "every day at 02:30",
		"0 2 * * *":       "every day at 02:00",
		"0 6,18 * * *":    "every day at 06:00 and 18:00",
		"*/15 * * * *":    "every 15 minutes",
		"* * * * *":       "every minute",
		"0 * * * *":       "every hour on the hour",
		"5 * * * *":       "every hour at 5 minutes past",
		"0 */2 * * *":     "every 2 hours on the hour",
		"0 */6 * * *":     "every day at 00:00, 06:00, 12:00 and 18:00",
		"*/10 8-17 * * *": "every 10 minutes from 08:00 to 17:59",
		"0 6 * * 1-5":     "every weekday (Monday to Friday) at 06:00",
		"0 6 * * MON-FRI": "every weekday (Monday to Friday) at 06:00",
		"0 7 * * 1":       "every Monday at 07:00",
		"0 7 * * 0":       "every Sunday at 07:00",
		"0 7 * * 7":       "every Sunday at 07:00",
		"0 7 * * 1,3,5":   "every Monday, Wednesday and Friday at 07:00",
		"0 7 * * 1-4":     "every Monday to Thursday at 07:00",
		"0 7 * * 6,0":     "every Saturday and Sunday at 07:00",
		"0 3 1 * *":       "on the 1st of every month at 03:00",
		"0 3 1,15 * *":    "on the 1st and 15th of every month at 03:00",
		"0 3 1-7 * *":     "on days 1 to 7 of every month at 03:00",
		"0 3 1 * 1":       "on the 1st of every month and every Monday at 03:00",
		"0 3 1 1 *":       "on the 1st of January at 03:00",
		"0 3 1,15 1-3 *":  "on the 1st and 15th of January to March at 03:00",
		"0 3 * 12 *":      "every day in December at 03:00",
		"*/30 * * * 1-5":  "every 30 minutes, every weekday (Monday to Friday)",
		"@daily":          "every day at 00:00",
		"@hourly":         "every hour on the hour",
		"@weekly":         "every Sunday at 00:00",
		"@every 90m":      "every 90 minutes",
		"@every 2h":       "every 2 hours",
		"@every 1h":       "every hour",
		"0 25 * * *":      "",
		"not a schedule":  "",
		"0 2 * * * *":     "",
		"@fortnightly":    "",
	} {
		require.Equal(t, want, jobs.DescribeSchedule(spec), spec)
	}
}
