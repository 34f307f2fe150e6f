package export

import (
	"strconv"
	"strings"
	"time"
)

// dateParts reads a paper's date: a day (2024-09-02), a month (2024-09),
// a year, or a time in RFC 3339 (its day, in UTC). m and d are 0 when
// the date does not give them.
func dateParts(s string) (y, m, d int, ok bool) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, strings.ToUpper(s)); err == nil {
		t = t.UTC()
		return t.Year(), int(t.Month()), t.Day(), t.Year() >= 1000 && t.Year() <= 9999
	}
	for _, layout := range []struct {
		form  string
		parts int
	}{{"2006-01-02", 3}, {"2006-01", 2}, {"2006", 1}} {
		t, err := time.Parse(layout.form, s)
		if err != nil || t.Year() < 1000 {
			continue
		}
		y = t.Year()
		if layout.parts >= 2 {
			m = int(t.Month())
		}
		if layout.parts == 3 {
			d = t.Day()
		}
		return y, m, d, true
	}
	return 0, 0, 0, false
}

// ParseDay checks a --since or --until value: a day, YYYY-MM-DD.
func ParseDay(s string) (string, bool) {
	t, err := time.Parse("2006-01-02", s)
	if err != nil || t.Year() < 1000 {
		return "", false
	}
	return t.Format("2006-01-02"), true
}

func pad(n, width int) string {
	s := strconv.Itoa(n)
	for len(s) < width {
		s = "0" + s
	}
	return s
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
