package bash

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/demiurge-dev/demiurge/tools"
)

// utilsSetup makes the files the utility scripts work on; it runs in
// bash and in the sandbox alike, before each script.
const utilsSetup = `mkdir -p src/sub .hid
printf 'hello\n' > src/a.txt
printf 'world\n' > src/sub/b.txt
printf 'foo bar\nBaz foo\nnothing\n' > notes.txt
printf 'package main\nfunc Foo() {}\n' > src/m.go
printf 'foo hidden\n' > .hid/h.txt
printf 'hello world, this is a test\000\001\377' > x.bin
seq 1 25 > n.txt
printf '1 a\n2 b\n4 d\n' > f1
printf '1 x\n3 y\n4 z\n4 w\n' > f2
printf 'id,name\n1,a\n2,b\n' > c1
printf 'id,v\n1,9\n2,8\n' > c2
printf '{"a":1}\n' > j.json
printf '#!/bin/bash\necho hi\n' > s.sh
printf 'a\r\nb\r\n' > crlf.txt
printf 'name 2048 x\nfoo 1048576 y\n' > sizes.txt
`

// utilsDiffCases are scripts of the utilities added for issue 26, each
// compared with the real tool (named first) run by /bin/bash. Outputs
// that depend on the host (file order of a directory, compression
// ratios, user names) are kept out: tar lists are sorted, rg runs with
// --sort path.
var utilsDiffCases = []struct{ tool, script string }{
	{"tar", `tar -czf out.tgz src && tar -tzf out.tgz | sort`},
	{"tar", `tar czf out.tgz src notes.txt; mkdir x; tar xzf out.tgz -C x; find x | sort; cat x/src/sub/b.txt`},
	{"tar", `tar -cf - src | tar -tf - | sort`},
	{"tar", `tar -cvf a.tar src | sort`},
	{"tar", `tar -cf a.tar src; tar -xOf a.tar src/a.txt`},
	{"tar", `tar -cf a.tar src; mkdir y; tar -xf a.tar -C y --strip-components=1; ls -R y`},
	{"tar", `tar -czf a.tgz --exclude='*.go' src notes.txt; tar tzf a.tgz | sort`},
	{"tar", `tar -xf nope.tar; echo $?; tar -tf notes.txt; echo $?; tar cf a.tar; echo $?`},
	{"gzip", `gzip notes.txt; ls; zcat notes.txt.gz; gunzip notes.txt.gz; ls; cat notes.txt`},
	{"gzip", `gzip -c src/a.txt | gunzip; echo hi | gzip | zcat; gzip -k src/a.txt; ls src; gzip -d src/a.txt.gz; echo $?`},
	{"xxd", `xxd x.bin; xxd -g1 -c8 x.bin; xxd -i x.bin; xxd -i < x.bin; xxd -b -l 4 x.bin`},
	{"xxd", `xxd -u -l 5 -s 3 x.bin; xxd -p x.bin; xxd -p x.bin | xxd -r -p | od -c; xxd x.bin | xxd -r | cmp - x.bin && echo same`},
	{"xxd", `head -c 64 /dev/zero > z.bin; xxd -a z.bin; xxd -c 5 -g 3 x.bin; xxd -s -4 x.bin; echo 414243 | xxd -r -p; echo`},
	{"hexdump", `hexdump x.bin; hexdump -C x.bin; hexdump -n 4 -s 2 -C x.bin; printf abc | hexdump; printf '' | hexdump -C`},
	{"hd", `hd x.bin`},
	{"numfmt", `numfmt --to=iec 1024 1536 1048576 999 0 1023 1025; numfmt --to=si 1000 1500 999999 12345678`},
	{"numfmt", `numfmt --from=iec 1K 1.5M 2G; numfmt --from=si 1K 1.5M; numfmt --to=iec-i 2048 3000000; numfmt --from=auto 1Ki 1K`},
	{"numfmt", `numfmt --to=iec --suffix=B 2048; numfmt --to=iec --format=%.2f 1536 1048576; numfmt --to=iec --round=nearest 1536 1500 1949`},
	{"numfmt", `numfmt --format=%08f 12; numfmt --padding=8 123; numfmt --to=iec --padding=-8 123456; numfmt 1.5`},
	{"numfmt", `numfmt --field=2 --to=iec < sizes.txt; numfmt --header --to=iec --field 2 < sizes.txt; printf 'a,1048576,x\n' | numfmt -d, --field 2 --to=iec`},
	{"numfmt", `numfmt abc; echo $?; numfmt --from=iec 1X; echo $?; numfmt --to=iec 9.95K; echo $?; numfmt --invalid=ignore --to=iec 1 x 2`},
	{"numfmt", `numfmt --to=si 1 10 100 999 1000 9999 10000 99999 100000 999999; numfmt --to=iec 10189 10240 10250 102400 1048575`},
	{"truncate", `truncate -s 5 n.txt; od -c n.txt; truncate -s +2K n.txt; wc -c n.txt; truncate -s -1K n.txt; wc -c n.txt; truncate -s %1000 n.txt; wc -c n.txt`},
	{"truncate", `truncate -s 0 new; ls new; truncate -c -s 5 nope; ls nope; truncate f1; echo $?; truncate -s 1KB f1; wc -c < f1; truncate -r x.bin f1; wc -c < f1`},
	{"strings", `strings x.bin; strings -n 3 -t x x.bin; strings -3 -t d x.bin`},
	{"unexpand", `printf '        a       b\n    c\n' | unexpand; printf '        a       b\n' | unexpand -a; printf '    x\n' | unexpand -t 4 | od -c`},
	{"unexpand", `printf 'a b       c  d        e\n' | unexpand -a | od -c; printf '            x  y\n' | unexpand -t 4,8 | od -c`},
	{"join", `join f1 f2; join -a1 f1 f2; join -v2 f1 f2; join -o 1.2,2.2 f1 f2; join -a1 -a2 -e NA -o 0,1.2,2.2 f1 f2`},
	{"join", `join -o auto -a1 -e X f1 f2; join -t, --header c1 c2; join -t, c1 c2; printf 'b 1\na 2\n' | join - f2; echo rc=$?`},
	{"split", `split -l 10 n.txt; ls x*; cat xac; split -l 10 -d n.txt part_; ls part_*`},
	{"split", `split -b 20 n.txt p- --additional-suffix=.txt; wc -c p-*; split -n 3 n.txt c; wc -c c*; seq 5 | split -l 2 - s; cat sab`},
	{"split", `split -a 3 -l 12 n.txt; ls x*; split -l 1 -a 1 n.txt q; echo $?`},
	{"shuf", `shuf n.txt | sort -n | head -3; shuf -n 3 n.txt | wc -l; shuf -i 1-10 | sort -n | tr '\n' ' '; shuf -e a b c | sort; shuf -r -n 5 -e x | tr -d '\n'; echo`},
	{"file", `file src/a.txt j.json s.sh crlf.txt x.bin src; file -b notes.txt; file -i notes.txt j.json src x.bin; file --mime-type notes.txt; file nope; echo $?; echo '{}' | file -`},
	{"tree", `tree; tree -L 1; tree -d; tree -a -I 'sub|*.txt'; tree -F --noreport src; tree -f -i src; tree --dirsfirst src; tree -f src/`},
	{"tree", `tree nope; echo $?; tree -P '*.txt' src`},
	{"rg", `rg --sort path foo; rg -n foo notes.txt; rg --sort path -l foo; rg --sort path -c foo; rg --sort path -i FOO src`},
	{"rg", `rg --sort path -t go -n Foo; rg --sort path --files; rg --sort path --hidden -l foo; rg --sort path -g '*.txt' -o 'fo+'`},
	{"rg", `rg -w Baz notes.txt; rg zzz; echo $?; rg --sort path -S Foo; rg -C1 Baz notes.txt; rg --sort path -g '!*.txt' foo`},
	{"rg", `rg -F -e 'foo b' notes.txt; rg nope nofile; echo $?; rg --sort path -v foo src; rg -q foo && echo yes; rg --sort path foo .`},
	{"cat", `printf 'a\n\n\n\nb\n\nc' | cat -s; printf 'a\n\n\nb\n' | cat -b; printf 'a\n\n\nb\n' | cat -bs; printf 'a\n\n\nb\n' | cat -ns`},
	{"grep", `printf 'a\0b\0ab\0' | grep -z a | od -c; printf 'a\nx\0b\0ab\0' | grep -zc a`},
	{"tty", `tty </dev/null; echo $?; tty -s </dev/null; echo $?; PS1='\l'; echo "${PS1@P}"`},
	{"grep", `grep --max-count 1 -n foo notes.txt; grep --context 1 --regexp Baz notes.txt; grep --max-count=1 -c foo notes.txt`},
	{"head", `seq 20 | head --lines 3; seq 3 | head --bytes 3; echo; seq 5 | tail --lines 2; seq 30 | tail --bytes 6; seq 3 | tail --bytes=+4`},
	{"od", `printf '\x00\x00\x80\x3f\xcd\xcc\xcc\x3d\x00\x00\x80\x7f\x00\x00\xc0\x7f\x00\x00\x80\xff\x01\x00\x00\x00\x00\x24\x74\x49' | od -t f4; printf 'abcdefghijklmnop' | od -t fD; printf '\x9a\x99\x99\x99\x99\x99\xb9\x3f\x00\x00\x00\x00\x00\x00\x24\x40\x00\x00\x00\x00\x00\x00\x00\x80\x00\x00\x00\x00\x65\xcd\xcd\x41' | od -A n -t f8 -t x8; seq 1 40 | od -t f4 -t f | head -5`},
	{"od", `printf 'hello world\0\001\377abc' | od -An -tc -tx1; printf 'hello world\0\001\377abc' | od -ta -tx4 -tu1 -tx2; printf 'hello' | od -w6 -c -x`},
	{"gawk", `echo 65 66 | awk '{printf "%c%c\n", $1, $2}'; echo 'foo=1 bar=2' | awk '{print gensub(/([a-z]+)=([0-9])/, "\\2:\\1", "g")}'`},
	{"gawk", `echo abc123def | awk '{if (match($0, /([a-z]+)([0-9]+)/, m)) print m[0], m[1], m[2], m[1, "start"], m[2, "length"]}'`},
}

// TestUtilitiesDifferential runs utilsDiffCases in /bin/bash with the real
// tools and in the sandbox, on the same files, and compares stdout and
// exit status. A case whose real tool is missing skips, saying so.
func TestUtilitiesDifferential(t *testing.T) {
	bash, err := exec.LookPath("/bin/bash")
	if err != nil {
		t.Skip("/bin/bash is not installed")
	}
	bin := t.TempDir()
	if gawk, err := exec.LookPath("gawk"); err == nil {
		os.Symlink(gawk, filepath.Join(bin, "awk"))
	}
	st := NewBuilder("utils").MustBuild()
	for _, tc := range utilsDiffCases {
		t.Run(tc.tool+"/"+tc.script, func(t *testing.T) {
			if _, err := exec.LookPath(tc.tool); err != nil {
				t.Skipf("%s is not installed on the host: the test compares with the real tool (.ci/run installs it)", tc.tool)
			}
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bash, "--norc", "--noprofile", "-c", utilsSetup+tc.script)
			cmd.Dir = dir
			cmd.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "LC_ALL=C.UTF-8", "HOME=" + dir, "TZ=UTC"}
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			wantExit := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				wantExit = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			res := st.RunScript(t.Context(), tools.Request{Commands: utilsSetup + tc.script}, RunOptions{})
			if res.Stdout != out.String() || res.ExitCode != wantExit {
				t.Errorf("sandbox: exit %d, stdout:\n%s(stderr %q)\nbash: exit %d, stdout:\n%s(stderr %q)",
					res.ExitCode, res.Stdout, res.Stderr, wantExit, out.String(), strings.TrimSpace(errOut.String()))
			}
		})
	}
}
