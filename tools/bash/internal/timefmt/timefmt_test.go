package timefmt

import (
	"testing"
	"time"
)

// The wanted strings are GNU date's (date -d @T +FORMAT, TZ as named).
func TestStrftime(t *testing.T) {
	utc := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	late := time.Date(1999, 12, 31, 23, 59, 59, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		t    time.Time
		f    string
		want string
	}{
		{utc, "%Y-%m-%d %H:%M:%S", "2026-01-02 03:04:05"},
		{utc, "%c", "Fri Jan  2 03:04:05 2026"},
		{late, "%c", "Fri Dec 31 23:59:59 1999"},
		{utc, "%-d/%_m/%e|%j|%u%w", "2/ 1/ 2|002|55"},
		{utc, "%z %Z %:z", "+0000 UTC +00:00"},
		{late, "%z %Z %:z", "+0100 CET +01:00"},
		{utc, "%s %D %T %R %x %X", "1767323045 01/02/26 03:04:05 03:04 01/02/26 03:04:05"},
		{utc, "%a %A %b %B %p %I", "Fri Friday Jan January AM 03"},
		{utc, "100%% %n%t", "100% \n\t"},
		{utc, "%", "%"},
	} {
		if got := Strftime(tc.f, tc.t); got != tc.want {
			t.Errorf("Strftime(%q, %v) = %q; want %q", tc.f, tc.t, got, tc.want)
		}
	}
}
