package jobs

import (
	"cmp"
	"fmt"
	"time"
	_ "time/tzdata" // schedules name IANA zones; a container may have no zoneinfo

	"github.com/robfig/cron/v3"
)

// ParseSchedule parses a schedule as syncs and the status pull carry it: a standard 5-field
// cron spec ("0 2 * * *") or a descriptor (@yearly, @monthly, @weekly, @daily, @hourly,
// @every 90m), read in the IANA time zone tz (UTC when empty). "0 2 * * *" in Europe/Oslo
// runs at 02:00 Oslo time, summer and winter. The result is a River periodic schedule.
func ParseSchedule(spec, tz string) (cron.Schedule, error) {
	tz = cmp.Or(tz, TimeZoneDefault)
	if _, err := time.LoadLocation(tz); err != nil {
		return nil, fmt.Errorf("time zone %q: %w", tz, err)
	}
	s, err := cron.ParseStandard("CRON_TZ=" + tz + " " + spec)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", spec, err)
	}
	return s, nil
}
