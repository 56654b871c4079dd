package mapping

import (
	"strconv"
	"time"
)

// civil is a calendar date without a time zone.
type civil struct{ y, m, d int }

func (c civil) less(o civil) bool {
	if c.y != o.y {
		return c.y < o.y
	}
	if c.m != o.m {
		return c.m < o.m
	}
	return c.d < o.d
}

func (c civil) String() string {
	b := make([]byte, 0, 10)
	return string(c.append(b))
}

func (c civil) append(b []byte) []byte {
	b = append(b, byte('0'+c.y/1000), byte('0'+c.y/100%10), byte('0'+c.y/10%10), byte('0'+c.y%10), '-')
	b = append(b, byte('0'+c.m/10), byte('0'+c.m%10), '-')
	return append(b, byte('0'+c.d/10), byte('0'+c.d%10))
}

func civilOf(t time.Time) civil {
	y, m, d := t.Date()
	return civil{y, int(m), d}
}

// dateRule says which dates a field accepts and how it reads a two-digit year.
type dateRule struct {
	min, max civil
	// birthday: a two-digit year is the latest year not after today ("17.5.85" is 1985,
	// "3.1.09" is 2009); otherwise a two-digit year falls in today's year −80 … +19.
	birthday bool
	today    civil
	// order is the column's date order: orderDayFirst, orderMonthFirst, orderYearFirst, or 0
	// when undecided (see parseDate).
	order byte
}

// Date orders of a column (Column.DateFormat, Spec.DateFormat).
const (
	DateDayFirst   = "day-first"   // 17.05.1985, 17/05/1985, 5/4/20 (5 April)
	DateMonthFirst = "month-first" // 05/17/1985, 3/4/1990 (4 March), as in the United States
	DateYearFirst  = "year-first"  // 1985-05-17, 1985/05/17
)

var dateFormats = []string{DateDayFirst, DateMonthFirst, DateYearFirst}

const (
	orderDayFirst   = 'd'
	orderMonthFirst = 'm'
	orderYearFirst  = 'y'
)

// orderOf is the order byte of a date format ("" and unknown ones: 0).
func orderOf(format string) byte {
	switch format {
	case DateDayFirst:
		return orderDayFirst
	case DateMonthFirst:
		return orderMonthFirst
	case DateYearFirst:
		return orderYearFirst
	}
	return 0
}

// Messages of the date problems that are warnings, not rejects: the value is dropped, the
// row sent (see dateCode).
const (
	msgAmbiguous = "could be day-first or month-first, and nothing in its column decides which (set date_format)"
	msgNoYear    = "has no year, and the service takes whole dates only"
)

// dateCode is the code of a date problem by its message.
func dateCode(msg string) string {
	switch msg {
	case msgAmbiguous:
		return CodeAmbiguousDate
	case msgNoYear:
		return CodeYearlessDate
	}
	return CodeInvalidDate
}

func birthdayRule(today civil) dateRule {
	return dateRule{min: civil{1900, 1, 1}, max: today, birthday: true, today: today}
}

func customDateRule(today civil) dateRule {
	return dateRule{min: civil{1000, 1, 1}, max: civil{9999, 12, 31}, today: today}
}

func (r dateRule) fullYear(yy int) int {
	century := r.today.y / 100 * 100
	y := century + yy
	if r.birthday {
		if y > r.today.y {
			y -= 100
		}
		return y
	}
	if y > r.today.y+19 {
		y -= 100
	} else if y < r.today.y-80 {
		y += 100
	}
	return y
}

// normDate reads a cleaned date and returns it as YYYY-MM-DD.
//
// Accepted forms: dd.mm.yyyy and d.m.yy (Norwegian), dd/mm/yyyy, mm/dd/yyyy and the same with
// dashes, in the column's order (r.order; see dayMonthOrder when it has none), yyyy-mm-dd (ISO
// 8601; also with slashes or dots; a time after it, "T10:00:00Z" or " 10:00", is ignored, as
// is a time after the other forms), and Excel serial day numbers (1 is 1900-01-01, a fraction
// is the time of day and is ignored). A four-digit number from 1900 to 2100 is rejected (a year
// or a serial?), and so are dates outside the field's range; a date without a year and one
// whose order is undecided get the messages msgNoYear and msgAmbiguous.
func normDate(a *Arena, s string, r dateRule) (string, string) {
	c, msg := parseDate(s, r)
	if msg != "" {
		return "", msg
	}
	if c.less(r.min) {
		return "", "is before " + r.min.String()
	}
	if r.max.less(c) {
		if r.birthday {
			return "", "is in the future"
		}
		return "", "is after " + r.max.String()
	}
	if len(s) == 10 && s[4] == '-' && s[7] == '-' {
		return s, "" // already YYYY-MM-DD: no need to build it again
	}
	b := a.bytes(10) // written in place, as YYYY-MM-DD has ten bytes
	c.append(b[:0])
	return unsafeString(b), ""
}

const notADate = "is not a date (use dd.mm.yyyy or yyyy-mm-dd)"

func parseDate(s string, r dateRule) (civil, string) {
	if len(s) > 2 && s[0] == '-' && s[1] == '-' {
		return civil{}, msgNoYear // ISO 8601 --MM-DD, as Google Contacts exports it
	}
	// Split into up to three runs of digits and the separators between them.
	var num [3]int
	var width [3]int
	var sep [2]byte
	n := 0
	i := 0
	for n < 3 {
		start := i
		v := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			if i-start < 9 {
				v = v*10 + int(s[i]-'0')
			}
			i++
		}
		if i == start {
			return civil{}, notADate
		}
		num[n], width[n] = v, i-start
		n++
		if i == len(s) || n == 3 {
			break
		}
		c := s[i]
		if c != '.' && c != '/' && c != '-' && c != ',' {
			break
		}
		sep[n-1] = c
		i++
	}
	rest := s[i:]
	switch {
	case n == 1 && rest == "" || n == 2 && (sep[0] == '.' || sep[0] == ',') && rest == "" && width[0] >= 3:
		return serialDate(num[0], width[0])
	case n < 3:
		if n == 2 && width[0] <= 2 && width[1] <= 2 {
			return civil{}, msgNoYear
		}
		return civil{}, notADate
	}
	if !timeSuffix(rest) {
		return civil{}, notADate
	}
	var c civil
	switch {
	case width[0] == 4 && sep[0] == sep[1] && sep[0] != ',' && width[1] <= 2 && width[2] <= 2:
		c = civil{num[0], num[1], num[2]} // year first: 1985-05-17, 1985/05/17, 1985.05.17
	case width[0] <= 2 && width[1] <= 2 && sep[0] == sep[1] && sep[0] != ',':
		y := num[2]
		switch width[2] {
		case 4:
		case 2:
			y = r.fullYear(num[2])
		default:
			return civil{}, notADate
		}
		switch dayMonthOrder(num[0], num[1], sep[0], r.order) {
		case orderDayFirst:
			c = civil{y, num[1], num[0]}
		case orderMonthFirst:
			c = civil{y, num[0], num[1]}
		case orderYearFirst:
			return civil{}, "is not written year first, as its column is"
		default:
			return civil{}, msgAmbiguous
		}
	default:
		return civil{}, notADate
	}
	if c.m < 1 || c.m > 12 {
		return civil{}, "has no month " + strconv.Itoa(c.m)
	}
	if c.d < 1 || c.d > daysIn(c.y, c.m) {
		return civil{}, "is not a day of the calendar"
	}
	return c, ""
}

// dayMonthOrder decides how a date written a.b.year is read: by the column's order when it
// has one; else a dot means day first (the locales that write dates with dots write them day
// first), a value over 12 can only be a day, and a day equal to its month reads the same
// either way. It returns 0 for an ambiguous value ("3/4/1990" in a column of no known order):
// it is never guessed.
func dayMonthOrder(a, b int, sep byte, order byte) byte {
	switch {
	case order != 0:
		return order
	case sep == '.', a > 12, a == b:
		return orderDayFirst
	case b > 12:
		return orderMonthFirst
	}
	return 0
}

// timeSuffix reports whether rest is empty or a time of day after a date: "T…" or " …" made
// of digits, ':', '.', '+', '-' and a closing 'Z'.
func timeSuffix(rest string) bool {
	if rest == "" {
		return true
	}
	if rest[0] != 'T' && rest[0] != ' ' || len(rest) < 2 {
		return false
	}
	for i := 1; i < len(rest); i++ {
		c := rest[i]
		if !('0' <= c && c <= '9' || c == ':' || c == '.' || c == '+' || c == '-' || c == 'Z' && i == len(rest)-1) {
			return false
		}
	}
	return true
}

// serialDate converts an Excel serial day number (1900 date system) to a date.
func serialDate(n, width int) (civil, string) {
	switch {
	case width == 4 && n >= 1900 && n <= 2100:
		return civil{}, "is a year or an Excel day number; give a whole date"
	case width > 7 || n < 1:
		return civil{}, notADate
	case n == 60:
		return civil{}, "is 29 February 1900, a day that does not exist"
	}
	// Excel counts 1900-02-29, which did not exist: from serial 61 on, day 0 is 1899-12-30
	// (25,569 days before 1970-01-01), before it 1899-12-31.
	if n > 60 {
		return civilFromDays(n - 25569), ""
	}
	return civilFromDays(n - 25568), ""
}

// civilFromDays returns the date z days after 1970-01-01, for z from -719468 on (the
// algorithm of Howard Hinnant's "chrono-compatible low-level date algorithms": eras of
// 400 years, years starting on 1 March).
func civilFromDays(z int) civil {
	z += 719468
	era := z / 146097
	doe := z - era*146097                                  // day of the era
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365 // year of the era
	doy := doe - (365*yoe + yoe/4 - yoe/100)               // day of the year, from 1 March
	mp := (5*doy + 2) / 153                                // month, from March
	c := civil{y: yoe + era*400, d: doy - (153*mp+2)/5 + 1, m: mp + 3}
	if mp >= 10 {
		c.m, c.y = mp-9, c.y+1
	}
	return c
}

func daysIn(y, m int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
