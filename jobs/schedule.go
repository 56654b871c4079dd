package jobs

import (
	"cmp"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // schedules name IANA zones; a container may have no zoneinfo

	"github.com/robfig/cron/v3"
)

// ParseSchedule parses a schedule as syncs and the status pull carry it: a standard 5-field
// cron spec ("0 2 * * *") or a descriptor (@yearly, @monthly, @weekly, @daily, @hourly,
// @every 90m), read in the IANA time zone tz (UTC when empty). "0 2 * * *" in Europe/Oslo
// runs at 02:00 Oslo time, summer and winter. The result is a River periodic schedule.
func ParseSchedule(spec, tz string) (cron.Schedule, error) {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return nil, fmt.Errorf("schedule %q: the time zone is set apart, not with a prefix", spec)
	}
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

var cronFields = [...]string{"minute", "hour", "day of month", "month", "day of week"}

// scheduleReason says what is wrong with a schedule ParseSchedule refused, naming the cron
// field: `"0 25 * * *": hour out of range`.
func scheduleReason(spec string) string {
	if strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ=") {
		return "put the time zone in time_zone, not in the schedule"
	}
	if strings.HasPrefix(spec, "@") {
		if strings.HasPrefix(spec, "@every") {
			return `want "@every <duration>", e.g. "@every 1h"`
		}
		return "unknown descriptor: want @yearly, @monthly, @weekly, @daily, @hourly or @every <duration>"
	}
	fields := strings.Fields(spec)
	if len(fields) != len(cronFields) {
		return fmt.Sprintf("want 5 fields (minute hour day-of-month month day-of-week), got %d", len(fields))
	}
	for i, f := range fields {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = f
		_, err := cron.ParseStandard(strings.Join(probe, " "))
		if err == nil {
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "above maximum") || strings.Contains(msg, "below minimum") {
			return cronFields[i] + " out of range"
		}
		return fmt.Sprintf("invalid %s %q", cronFields[i], f)
	}
	return "not a valid schedule"
}
