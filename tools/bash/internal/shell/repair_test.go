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
		{"a=1 b[0]=$x c=3 cmd\n", "a=1 " + badAssignCarrier + "='b[0]' c=3 cmd\n"},
		{"# a[ comment\na[1 + 2]+= cmd a[1 + 2]=\n", "# a[ comment\n" + badAssignCarrier + "='a[1 + 2]' cmd a[1 + 2]=\n"},
		{"a[5 + 3]+ x\n", `\a[5" "+" "3]+ x` + "\n"},
		{"a=([k]=1 [k]+=2)\n", "a=([k]=1 [k]=" + elemAppendMarker + "2)\n"},
		{"echo `echo \"` x\n", "echo $(" + badComsubCarrier + ` '"')` + " x\n"},
		{`echo "1 ` + "`[[ $(echo \\\\\" > f) ]]`" + ` 2"` + "\n", `echo "1 $([[ $(echo \" > f) ]]) 2"` + "\n"},
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

func TestInDoubleQuotes(t *testing.T) {
	for _, tc := range []struct {
		text string
		at   int
		want bool
	}{
		{"echo \"a `b`\"", 8, true},
		{"echo \"a `b`\"", 10, false}, // the closing backquote
		{"echo a `b`", 7, false},
		{"echo 'x \"' `b`", 11, false},
		{"# it's\necho \"`b`\"", 13, true},
	} {
		if got := inDoubleQuotes(tc.text, tc.at); got != tc.want {
			t.Errorf("inDoubleQuotes(%q, %d) = %v; want %v", tc.text, tc.at, got, tc.want)
		}
	}
}
