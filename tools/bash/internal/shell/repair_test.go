package shell

import "testing"

func TestRepairText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"echo $(( ${base}#a ))\n", "echo $(" + arithCarrier + ` " ${base}#a ")` + "\n"},
		{"if ((test a) || (test b)); then :; fi\n", "if ( (test a) || (test b)); then :; fi\n"},
		{"let x=( 1 ) y=2 'z = 3'\n", "let \"x=( 1 )\" y=2 'z = 3'\n"},
		{"if let y=( x + 2 ); then :; fi\n", "if let \"y=( x + 2 )\"; then :; fi\n"},
		{"[[ '' == @() ]]\n", "[[ '' == @('') ]]\n"},
		{"unset ${(M)${(k)p[@]}:#x_*}\n", "unset $(" + paramCarrier + " '${(M)${(k)p[@]}:#x_*}')\n"},
		{"echo ${s:}\n", "echo $(" + paramCarrier + " '${s:}')\n"},
		{"x=`(((grep a f) ; (b) ) | head -n 1)`\n", "x=`( ( (grep a f) ; (b) ) | head -n 1)`\n"},
		{"echo x; a=( 1 b=() 2 )\necho y\n", badLineCarrier + " '('\necho y\n"},
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
