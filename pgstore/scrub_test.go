package pgstore

import (
	"errors"
	"strings"
	"testing"
)

// TestScrub: a password is hidden where a message shows it, and a short
// one garbles nothing else (replacing every "o" gave it away).
func TestScrub(t *testing.T) {
	base := errors.New("base")
	for _, tc := range []struct {
		secret, msg, want string
	}{
		{"o", "pgstore: connect to postgres://demiurge:o@127.0.0.1:5432/demiurge: password authentication failed for user",
			"pgstore: connect to postgres://demiurge:xxxxx@127.0.0.1:5432/demiurge: password authentication failed for user"},
		{"demiurge", "open postgres://demiurge:demiurge@h/demiurge", "open postgres://xxxxx:xxxxx@h/xxxxx"},
		{"pw", "dial host=h password=pw user=u", "dial host=h password=xxxxx user=u"},
		{"pw", "dial host=h password='pw' user=u", "dial host=h password='xxxxx' user=u"},
		{"pw", "dial password=pwd", "dial password=pwd"}, // another value, not this secret
		{"p@ss", "open postgres://u:p%40ss@h/db", "open postgres://u:xxxxx@h/db"},
		{"p@ss:w/rd", "bad URL postgres://u:p%40ss%3Aw%2Frd@h/db; p@ss:w/rd", "bad URL postgres://u:xxxxx@h/db; xxxxx"},
		{"long-secret-123", "it said long-secret-123 twice: long-secret-123", "it said xxxxx twice: xxxxx"},
		{"o", "nothing of it here: foo", "nothing of it here: foo"},
	} {
		err := scrub(&wrapped{msg: tc.msg, err: base}, tc.secret)
		if got := err.Error(); got != tc.want {
			t.Errorf("scrub(%q, %q) = %q; want %q", tc.msg, tc.secret, got, tc.want)
		}
		if !errors.Is(err, base) {
			t.Errorf("scrub(%q): errors.Is lost the cause", tc.msg)
		}
		if len(tc.secret) >= 3 && strings.Contains(err.Error(), ":"+tc.secret+"@") {
			t.Errorf("scrub(%q) still shows the password: %q", tc.msg, err)
		}
	}
}

type wrapped struct {
	msg string
	err error
}

func (e *wrapped) Error() string { return e.msg }
func (e *wrapped) Unwrap() error { return e.err }
