package jobs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DescribeSchedule says a schedule (as ParseSchedule reads it) in words, for people beside
// the cron spec: "every day at 02:30", "every 15 minutes", "every weekday (Monday to
// Friday) at 06:00", "on the 1st of every month at 03:00". The times are in the schedule's
// own time zone. It returns "" for a schedule it cannot read (ParseSchedule says why).
func DescribeSchedule(spec string) string {
	spec = strings.TrimSpace(spec)
	if strings.HasPrefix(spec, "@") {
		return describeDescriptor(spec)
	}
	f := strings.Fields(spec)
	if len(f) != 5 {
		return ""
	}
	var c cronSpec
	var ok bool
	if c.minutes, _, ok = cronField(f[0], 0, 59, nil); !ok {
		return ""
	}
	if c.hours, _, ok = cronField(f[1], 0, 23, nil); !ok {
		return ""
	}
	if c.doms, c.domStar, ok = cronField(f[2], 1, 31, nil); !ok {
		return ""
	}
	if c.months, _, ok = cronField(f[3], 1, 12, monthNames); !ok {
		return ""
	}
	if c.dows, c.dowStar, ok = cronField(f[4], 0, 7, dayNames); !ok {
		return ""
	}
	c.dows = weekdays(c.dows)
	return c.words()
}

type cronSpec struct {
	minutes, hours, doms, months, dows []int
	domStar, dowStar                   bool
}

var (
	monthNames = []string{"", "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dayNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	monthWords = []string{"", "January", "February", "March", "April", "May", "June", "July", "August",
		"September", "October", "November", "December"}
)

// cronField reads one field of a cron spec into its sorted values, and whether it was "*" (or
// "?"), which cron treats apart for the days.
func cronField(s string, lo, hi int, names []string) ([]int, bool, bool) {
	if s == "*" || s == "?" {
		return span(lo, hi, 1), true, true
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		rng, step := part, 1
		if r, st, ok := strings.Cut(part, "/"); ok {
			n, err := strconv.Atoi(st)
			if err != nil || n < 1 {
				return nil, false, false
			}
			rng, step = r, n
		}
		a, b := lo, hi
		if rng != "*" && rng != "?" {
			x, y, isRange := strings.Cut(rng, "-")
			var ok bool
			if a, ok = cronValue(x, lo, hi, names); !ok {
				return nil, false, false
			}
			b = a
			if isRange {
				if b, ok = cronValue(y, lo, hi, names); !ok || b < a {
					return nil, false, false
				}
			} else if step > 1 {
				b = hi // "5/15" is "5-59/15"
			}
		}
		out = append(out, span(a, b, step)...)
	}
	slices.Sort(out)
	return slices.Compact(out), false, true
}

func cronValue(s string, lo, hi int, names []string) (int, bool) {
	if i := slices.Index(names, strings.ToLower(s)); i >= 0 && s != "" {
		return i, true
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, false
	}
	return n, true
}

func span(a, b, step int) []int {
	var out []int
	for v := a; v <= b; v += step {
		out = append(out, v)
	}
	return out
}

// weekdays folds 7 (Sunday) onto 0.
func weekdays(d []int) []int {
	out := make([]int, 0, len(d))
	for _, v := range d {
		out = append(out, v%7)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (c cronSpec) words() string {
	everyDay := c.domStar && c.dowStar && len(c.months) == 12
	if len(c.minutes) == 1 && len(c.hours) <= 6 {
		times := make([]string, len(c.hours))
		for i, h := range c.hours {
			times[i] = fmt.Sprintf("%02d:%02d", h, c.minutes[0])
		}
		return c.days(false) + " at " + and(times)
	}
	t := c.clock()
	if everyDay {
		return t
	}
	return t + ", " + c.days(true)
}

// clock says when in a day the schedule runs, for a schedule that runs more than a few
// times a day.
func (c cronSpec) clock() string {
	var mins string
	switch step, ok := evenSteps(c.minutes, 60); {
	case len(c.minutes) == 60:
		mins = "every minute"
	case ok && step > 1:
		mins = fmt.Sprintf("every %d minutes", step)
	case len(c.minutes) == 1 && c.minutes[0] == 0:
		mins = "every hour on the hour"
	case len(c.minutes) == 1:
		mins = fmt.Sprintf("every hour at %d minutes past", c.minutes[0])
	default:
		mins = "every hour at minutes " + and(itoas(c.minutes))
	}
	switch step, ok := evenSteps(c.hours, 24); {
	case len(c.hours) == 24:
		return mins
	case ok && len(c.minutes) == 1 && c.minutes[0] == 0:
		return fmt.Sprintf("every %d hours on the hour", step)
	case ok && len(c.minutes) == 1:
		return fmt.Sprintf("every %d hours at %d minutes past", step, c.minutes[0])
	case contiguous(c.hours):
		return fmt.Sprintf("%s from %02d:00 to %02d:59", mins, c.hours[0], c.hours[len(c.hours)-1])
	}
	return fmt.Sprintf("%s in the hours %s", mins, and(itoas(c.hours)))
}

// days says on which days the schedule runs: "every day", "every Monday", "on the 1st of
// every month"; on says it after a time of day ("on Mondays").
func (c cronSpec) days(on bool) string {
	var d string
	switch {
	case c.domStar && c.dowStar:
		d = "every day"
	case c.domStar:
		d = c.weekdayWords(on)
	case c.dowStar && len(c.months) < 12:
		return "on " + c.domWords() + " of " + monthsWords(c.months)
	case c.dowStar:
		d = "on " + c.domWords() + " of every month"
	default:
		// cron runs on either: the day of the month or the day of the week.
		d = "on " + c.domWords() + " of every month and " + c.weekdayWords(on)
	}
	if len(c.months) < 12 {
		d += " in " + monthsWords(c.months)
	}
	return d
}

func (c cronSpec) weekdayWords(on bool) string {
	switch {
	case slices.Equal(c.dows, []int{1, 2, 3, 4, 5}):
		return "every weekday (Monday to Friday)"
	case slices.Equal(c.dows, []int{0, 6}):
		return "every Saturday and Sunday"
	case len(c.dows) == 7:
		return "every day"
	}
	names := make([]string, len(c.dows))
	for i, d := range c.dows {
		names[i] = time.Weekday(d).String()
		if on {
			names[i] += "s"
		}
	}
	if len(names) > 2 && contiguous(c.dows) {
		names = []string{names[0] + " to " + names[len(names)-1]}
	}
	if on {
		return "on " + and(names)
	}
	return "every " + and(names)
}

func (c cronSpec) domWords() string {
	if len(c.doms) > 2 && contiguous(c.doms) {
		return fmt.Sprintf("days %d to %d", c.doms[0], c.doms[len(c.doms)-1])
	}
	out := make([]string, len(c.doms))
	for i, d := range c.doms {
		out[i] = ordinal(d)
	}
	return "the " + and(out)
}

func monthsWords(ms []int) string {
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = monthWords[m]
	}
	if len(names) > 2 && contiguous(ms) {
		return names[0] + " to " + names[len(names)-1]
	}
	return and(names)
}

func describeDescriptor(spec string) string {
	switch spec {
	case "@yearly", "@annually":
		return "every year on 1 January at 00:00"
	case "@monthly":
		return "on the 1st of every month at 00:00"
	case "@weekly":
		return "every Sunday at 00:00"
	case "@daily", "@midnight":
		return "every day at 00:00"
	case "@hourly":
		return "every hour on the hour"
	}
	if d, ok := strings.CutPrefix(spec, "@every "); ok {
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || dur <= 0 {
			return ""
		}
		switch {
		case dur%time.Hour == 0:
			return every(int64(dur/time.Hour), "hour")
		case dur%time.Minute == 0:
			return every(int64(dur/time.Minute), "minute")
		case dur%time.Second == 0:
			return every(int64(dur/time.Second), "second")
		}
		return "every " + dur.String()
	}
	return ""
}

func every(n int64, unit string) string {
	if n == 1 {
		return "every " + unit
	}
	return fmt.Sprintf("every %d %ss", n, unit)
}

// evenSteps reports whether vs are 0, s, 2s, … up to below max for a step s that divides max.
func evenSteps(vs []int, max int) (int, bool) {
	if len(vs) < 2 || vs[0] != 0 {
		return 0, false
	}
	s := vs[1]
	if max%s != 0 || len(vs) != max/s {
		return 0, false
	}
	for i, v := range vs {
		if v != i*s {
			return 0, false
		}
	}
	return s, true
}

func contiguous(vs []int) bool {
	for i := 1; i < len(vs); i++ {
		if vs[i] != vs[i-1]+1 {
			return false
		}
	}
	return len(vs) > 0
}

func itoas(vs []int) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strconv.Itoa(v)
	}
	return out
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}

// and joins words as a sentence lists them: "a", "a and b", "a, b and c".
func and(words []string) string {
	switch len(words) {
	case 0:
		return ""
	case 1:
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}
