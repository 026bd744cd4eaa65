package shell

import "testing"

func TestRepairText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"echo $(( ${base}#a ))\n", "echo $(" + arithCarrier + ` " ${base}#a ")` + "\n"},
		{"if ((test a) || (test b)); then :; fi\n", "if ( (test a) || (test b)); then :; fi\n"},
	} {
		err := parseErr(tc.in)
		if err == nil {
			t.Errorf("%q parses", tc.in)
			continue
		}
		got, ok := repairText(tc.in, err)
		if !ok || got != tc.want {
			off, _ := errOffset(tc.in, err)
			t.Errorf("repairText(%q) = %q, %v; want %q (error %v at %d)", tc.in, got, ok, tc.want, err, off)
		}
	}
}
