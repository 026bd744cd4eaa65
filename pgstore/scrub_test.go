package pgstore

import (
	"errors"
	"strings"
	"testing"
)

// TestScrub: a password is hidden where a message shows it, a short one
// garbles nothing else (replacing every "o" gave it away), and one that
// is also the user or database name blanks only the password.
func TestScrub(t *testing.T) {
	base := errors.New("base")
	for _, tc := range []struct {
		secret, msg, want string
		name              string // the store's redacted name
	}{
		{secret: "o", msg: "pgstore: connect to postgres://demiurge:o@127.0.0.1:5432/demiurge: password authentication failed for user",
			want: "pgstore: connect to postgres://demiurge:xxxxx@127.0.0.1:5432/demiurge: password authentication failed for user"},
		{secret: "postgres", msg: "pgstore: open postgres://postgres:postgres@localhost:5432/postgres: failed",
			want: "pgstore: open postgres://postgres:xxxxx@localhost:5432/postgres: failed", name: "postgres://postgres:xxxxx@localhost:5432/postgres"},
		{secret: "demiurge", msg: "open postgres://demiurge:demiurge@h/demiurge", want: "open postgres://demiurge:xxxxx@h/demiurge",
			name: "postgres://demiurge:xxxxx@h/demiurge"},
		{secret: "pw", msg: "dial host=h password=pw user=u", want: "dial host=h password=xxxxx user=u"},
		{secret: "pw", msg: "dial host=h password='pw' user=u", want: "dial host=h password='xxxxx' user=u"},
		{secret: "pw", msg: "dial password=pwd", want: "dial password=pwd"}, // another value, not this secret
		{secret: "p@ss", msg: "open postgres://u:p%40ss@h/db", want: "open postgres://u:xxxxx@h/db"},
		{secret: "p+s", msg: "open postgres://u:p+s@h/db", want: "open postgres://u:xxxxx@h/db"},
		{secret: "p@ss:w/rd", msg: "bad URL postgres://u:p%40ss%3Aw%2Frd@h/db; p@ss:w/rd", want: "bad URL postgres://u:xxxxx@h/db; xxxxx"},
		{secret: "long-secret-123", msg: "it said long-secret-123 twice: long-secret-123", want: "it said xxxxx twice: xxxxx"},
		{secret: "o", msg: "nothing of it here: foo", want: "nothing of it here: foo"},
	} {
		err := scrub(&wrapped{msg: tc.msg, err: base}, tc.secret, tc.name)
		if got := err.Error(); got != tc.want {
			t.Errorf("scrub(%q, %q) = %q; want %q", tc.msg, tc.secret, got, tc.want)
		}
		if !errors.Is(err, base) {
			t.Errorf("scrub(%q): errors.Is lost the cause", tc.msg)
		}
	}
	for _, dsn := range []string{"host=h password=pw user=u", "user=u password='secret' dbname=d"} {
		if got := Redact(dsn); strings.Contains(got, "pw") || strings.Contains(got, "secret") {
			t.Errorf("Redact(%q) = %q shows the password", dsn, got)
		}
	}
}

type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }
