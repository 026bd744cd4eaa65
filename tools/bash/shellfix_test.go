package bash

import "testing"

// shellFixes are scripts, each a fix of the sandbox's shell found by the
// Oils spec runner, whose stdout and status must equal real bash's. Each
// runs in a fresh directory (bash) and a fresh file system (sandbox), so
// unlike diffScripts they may write files.
var shellFixes = []struct{ name, script string }{
	{"vi and emacs exclude each other", `set -o vi; set -o emacs; set -o | grep -E '^(vi|emacs) '; set -o vi; set -o | grep -E '^(vi|emacs) '`},
	{"set -n reads and does not run", `echo before; set -n; echo never; exit 3`},
	{"bash -c without PATH has bash's default", `(unset PATH; /bin/bash -c 'echo "$PATH"')`},
	{"a utility named by its path skips $PATH's scripts", `mkdir d; printf '#!/bin/sh\necho mine\n' > d/cat; chmod +x d/cat; PATH=$PWD/d:$PATH; echo hi | /bin/cat; echo hi | cat`},
	{"bytes that are not UTF-8 are quoted in octal", `for x in $'\xff' $'\xce\xce\xbc' $'a\xce' $'\x01b' $'\xc2\x80' μ $'\u200b' $'\x7f'; do printf '%q ' "$x"; echo "${x@Q}"; done; x=$'\xffa'; declare -p x; set | grep ^x=; { set -x; : $x; } 2>&1`},
	{"prompt escapes are not expanded again, \\D{format}", `mkdir -p 'd$foo'; cd 'd$foo'; foo=V; PS1='\w|\W|$foo|\D{%Y}|\D{}|\D{%H:%M}'; x=${PS1@P}; echo "${x//[0-9]/N}"`},
	{"set -e in a condition or && list does not take effect, under ! it does", `f() { set -e; false; echo x; }; if f; then :; fi; f && true; { set -e; false; echo x; } || true; set +e; if (set -e; false; echo sub); then :; fi; x=$(f; echo y); echo "[$x]"; set +e; ! { set -e; false; echo never; }; echo never`},
	{"GLOBIGNORE: bracket classes, slashes, dot files", `touch {_testing.py,pyproject.toml,20231114.log,.env} 'has space.docx' one.md one.txt; mkdir -p foo; touch foo/{two.md,two.txt}; GLOBIGNORE=*.txt; echo *.* foo/*.*; for g in '[[:alnum:]]*' '[![:alnum:]]*' '*[[:space:]]*' '[[:digit:]_.]*' '*.md:*.log'; do GLOBIGNORE=$g; echo *.*; done`},
	{"set -u: unset arrays expand to nothing with [@], transformations of unset fail", `set -u; echo "[${undefined[@]}]" "[${undefined[*]}]" ${undefined[@]} ${!undefined[@]}; (echo ${undef@Q}); echo $?; (echo ${undef@U}); echo "${undef[@]@Q}" ok; set +u; echo ${undef@K}x ${undef@k}x ${undef@A}x ${undef@a}x ${undef@Q}x ${undef@E}x ${undef@P}x ${undef@U}x; declare -r undef; echo ${undef@a}; set -u; echo ${undef@a}`},
	{"an assignment whose redirection fails has status 1", `x=1 > /; echo "status=$?"; bash -c 'set -e; assign=foo > /; echo never'; echo "errexit status=$?"`},
	{"bash FILE that does not exist: 127, or 1 with errexit", `bash nofile; echo $?; bash -e nofile; echo $?; bash -o errexit nofile; echo $?; bash -eu nofile; echo $?`},
	{"an extended glob in an assignment keeps its text", "shopt -s extglob\ng=--@(help|verbose) h=x+([0-9])y k=!(a|b)\necho \"$g $h $k\"\n[[ --help == $g ]] && echo T1\ncase --verbose in $g) echo T2;; esac\nx=--help; echo \"[${x#$g}] [${x/$g/r}]\"; [[ x12y == $h ]] && echo T3; touch a c; echo $k"},
	{"signals sent to the shell run its traps or end it", `trap "echo T \$?" USR1; kill -USR1 $$ $$; echo x; trap "echo USR1 trap status=\$?; ( exit 42 )" USR1; sh -c "kill -USR1 $$"; echo after=$?; (trap "" TERM; kill $BASHPID; echo ignored); kill -0 $$; echo zero $?; kill -CHLD $$; echo chld; (kill -USR1 $BASHPID; echo never); echo sub=$?; trap "echo bye" EXIT; kill $$; echo never`},
	{"LINENO in EXIT and signal traps counts the handler's lines", "trap 'false; echo $LINENO usr1' USR1\ntrap 'false; echo $LINENO err' ERR\nsh -c \"kill -USR1 $$\"\necho after=$?\ntrap 'echo exit $LINENO\necho $LINENO' EXIT\necho a"},
	{"an array literal before a command is its text", `A=a B=(b b) printenv A B; A=a B=([k]=v) printenv A B; x=(1 2) true; echo "${x[@]}"`},
	{"a backslash quotes } in a double-quoted expansion's word", `echo "${var-}}"; echo "${var-\}}"; echo "${var-'}'}"; echo "${var-"}"}"; echo "${var-a\\}b}"; echo "${var-\$x\}\\\}y}"; echo ${var-\}}`},
	{"a bad substitution holding a quote is reported, not run", `set -- '####'; (echo ${#1#'###'}); echo st=$?; x=a; (echo ${#x/'a'/b}); echo st=$?`},
	{"a here-document delimiter holding an expansion is its text", "a=1; cat <<${a}\nhere $a\n${a}\ncat <<$(a)\nthere\n$(a)\ncat <<-$x\n\ttab\n\t$x\necho end"},
	{"empty arithmetic: (( )) is false, $(( )) is 0", "(( ))\necho status=$?\necho $(( )) $((  ))\nx=$(( )); echo \"[$x]\""},
	{"single quotes inside a double-quoted expansion's word are kept and what they hold expanded", `var="a b c"; argv() { printf "<%s>" "$@"; echo; }; argv "${Unset:-'$var'}" "${Unset:-'x\"y'}" "${Unset:-'\$var'}" ${Unset:-'$var'} "${Unset:-'a\\b\qc'}" "${U-'$(echo hi)'}"`},
	{"an assignment whose expansion fails makes no redirection", `(X=${x?bc} > walrus); test -f walrus && echo exists1; (Y=1 > w2); test -f w2 && echo exists2`},
	{"a list assigned to an array element is refused", "a=(1 '2 3')\na[-1]+=(4 5)\necho \"st=$?\"; printf '<%s>' \"${a[@]}\"; echo\na[1+1]+=(4 5)\necho \"st=$?\""},
	{"an empty subscript is a bad array subscript", "a=(1 2 3)\na[]=42\necho status=$?\necho ${a[@]}\na[\"\"]=5; echo $? ${a[@]}"},
	{"a list assigned to an element with = is refused too", "a=(1 2)\na[0]=(3 4)\necho \"status=$?\"; echo ${a[@]}\na[1]=(x)\necho st=$?"},
	{"declare +a keeps a quoted (...) word a string", `declare +a 'xyz1=1'; declare +a 'xyz2=(2 3)'; declare -a 'xyz3=4'; declare -a 'xyz4=(5 6)'; printf '<%s>' "${xyz1}" "${xyz2}" "${xyz3[@]}" "${xyz4[@]}"; echo; declare -p xyz2 xyz4`},
	{"LC_ALL=C makes lengths, offsets and patterns count bytes; a locale not installed is refused", "x=μ; echo ${#x}; export LC_ALL=C; echo ${#x} ${x:1} | od -c | head -2; s='_μ_ a'; echo ${s/_?_/X} ${s/_??_/X}; case μ in ??) echo two;; ?) echo one;; esac; [[ μ == ? ]] && echo q1; [[ μ == [^a][^a] ]] && echo q2\ntouch _x_ _μ_; echo _?_; LC_ALL=C.UTF-8; echo _?_ ${#x}; LC_ALL=c.utf8; echo ${#x}; LC_ALL=POSIX; echo ${#x}; LC_CTYPE=foo true; export LC_CTYPE=bar; unset LC_ALL; echo ${#x}; LANG=en_US.UTF-8; echo ${#x}; LC_CTYPE=C.utf8; echo ${#x}" + ` 2>&1; LC_CTYPE=xx bash -c 'echo _?_' 2>&1`},
	{"assignments before a function call are its locals; local inherits them; eval's are local to it", `unlocal() { unset -v "$1"; }; show() { echo "$1: ${v-(unset)}"; }
f() { show call; local v; show local; (unset v; show unset); (unlocal v; show unlocal); }
g() { local v; show inherit; }; h() { g; }
k() { x=mutated; unset x; echo "x=$x"; }
e() { local v=l1; v=t2 eval 'local v=l2; show eval; (unset v; show unset2); (unlocal v; show unlocal2)'; show after; }
v=global; x=global
v=tempenv f; v=tempenv eval f; v=tempenv h; x=temp k; v=t1 e; f`},
	{"namerefs to a[expr] expand it, to a[@] read as \"${a[@]}\", and refuse whole-array writes", `a=(zero one two three); typeset -n r1='a[$(echo 2) + 1]'; echo "r1=$r1"; typeset -n r2='a[@]'; printf '<%s>' "$r2"; echo; printf '<%s>' "${r2[@]}"; echo; r2=(X Y); echo "st=$?"; typeset -n r3='a[0]'; r3[0]=foo; echo "st=$?"; r3=new; echo "${a[@]}"`},
	{"an associative array's [k]=~ keeps the tilde; declare -A of a scalar keeps it as [0]", `HOME=/h; a=([k]=~ [j]=~:~); declare -p a; declare -A c=([k]=~ [j]=a:~); declare -p c; declare -A d; d=([k]=~); declare -p d; e=(~ x=~); declare -p e; s=w; declare -A s; declare -p s; t=w; declare -A t+=([a]=1); declare -p t; u=w; declare -A u=([a]=1); declare -p u`},
	{"unset s[0] of a scalar unsets it, another subscript is refused", `declare undef; unset -v 'undef[1]'; echo $?; unset -v 'undef["key"]'; echo $?; s=1; unset 's[a]'; echo $? ${s-unset}; t=2; unset 't[1]'; echo $? $t`},
	{"${!ref:-w} through ref=a[@] tests for no elements", `f() { ref='a[@]'; echo "[${!ref-n}] [${!ref:-c}] [${!ref:+p}]"; ref='a[*]'; echo "[${!ref-n}] [${!ref:-c}] [${!ref:+p}]"; }; a=(); f; a=(""); f; a=("" ""); f; IFS=; f; echo "[${a[@]:-w}] [${a[*]:-w}]"`},
	{"braces expand in the text: {$a,b}_c names the variable a_c", `a=A; a_c=AC; ab=AB; echo {$a,b}_{c,d}; echo {_$a,b}_{c,d}; echo $a{b,c}; echo ${a}{b,c}; set -- x; echo $1{0,1} {$a,b}.{c,d}`},
	{"${!A@a} of an array without element 0 is nothing", `declare -A A=(["x"]=y); echo "[${!A@a}] [${!A[@]@a}]"; B=(); echo "[${!B@a}]"; x=1; declare -i x; r=x; echo "[${!r@a}]"; C=([1]=q); echo "[${!C@a}]"`},
	{"<> reads and writes at one offset, overwriting", `set -C; echo foo >| f; exec 3<> f; read -n 1 <&3; echo -n . >&3; exec 3>&-; cat f; echo; printf 'abcdef' > g; exec 4<> g; echo -n XY >&4; read -n 2 x <&4; echo "[$x]"; echo -n 0123456 >&4; exec 4>&-; cat g; echo; exec 5<> new; echo hi >&5; exec 5>&-; cat new`},
	{"<(< file) is the file, as $(< file)", `echo FOO > foo; tr A-Z a-z < <(<foo); cat < <(<foo; echo hi); set -x; cat <(< foo) 2>&1; set +x; cat <(< nofile) 2>/dev/null; echo end`},
	{"a PS4 whose expansion fails is reported and the command still runs", `x=1; PS4='+oops $(( 1 / 0 )) '; set -x; echo one; echo status=$?; set +x; PS4='+$(( x + 1 )) '; set -x; echo two 2>&1`},
	{"declare -a alone lists the arrays, -i the integers, as declare -p", `z=(); declare -i n=1; declare -A m=([k]=v); declare -a | grep -E "z=|n=|m="; declare -i | grep -E "z=|n=|m="; declare -A | grep -E "z=|n=|m="; declare -ai | grep -E "z=|n="; echo end`},
	{"a quoted transformation of an unset parameter is an empty word", `p() { printf '<%s>' "$@"; echo; }; p "${undef@Q}" "${undef@U}"; a1=(); declare -A ref=([d]=a1); p "${!ref[@]@Q}" "${!ref[@]@P}"; p ${undef@Q} x`},
	{"declare -F NAME under extdebug tells where NAME was defined", "shopt -s extdebug\nf() { :; }\ndeclare -F f; declare -F; echo 'g() { :; }' > lib.sh; source lib.sh; declare -F g; declare -F nope; echo $?\nshopt -u extdebug; declare -F f"},
	{"POSIX: what a special builtin leaves of the assignments before it stays", `f() { x=42; x=tmp unset x; echo "x=$x"; x=42; x=tmp eval 'unset x'; echo "x=$x"; }; f; set -o posix; f; y=1 :; echo "y=$y"; z=1 eval 'z=2'; echo "z=$z"; w=5 readonly w; w=6; echo "w=$w"; sh -c 'echo "env y=$y"'; echo end`},
	{"a zsh expansion is a bad substitution when it runs, not a syntax error", "if false; then\n  unset ${(M)${(k)parameters[@]}:#x_*}\nfi\necho status=$?\neval 'echo z ${(m)foo} z'\necho status=$?\neval 'echo ${x:-${(m)foo}}'\necho status=$?"},
	{"${s:} is a bad substitution, ${s: } and ${s::} are offset 0", "s=123; echo \"[${s: }] [${s::}] [${s:1:}]\"; a=(1 2); echo ${a[@]: }; (echo ${a[@]:}); echo st=$?; echo ${s:}; echo never"},
	{"let's arguments holding parentheses and blanks are one word each; quotes are removed", "let x=( 1 )\nlet y=( x + 2 ) 'w = 4'\nlet z=( y * 3 )\necho $x $y $z $w\nif let x=(0); then echo T; else echo F; fi"},
	{"an empty extended glob matches the empty string", "shopt -s extglob\n[[ '' == @() ]] && echo T1\n[[ X == @() ]] || echo F1\n[[ '' == @(||) ]] && echo T2\ncase '' in @()) echo E;; esac\necho @() x*()\ntouch +; echo [+()] [+(])"},
	{"$ and a name split by a backslash-newline are one expansion", "x=5; echo $\\\n? \"a$\\\nx\" b$\\\n#c \\$\\\n? \\\\$\\\n?"},
	{"~root is /root, in words, braces, assignments and patterns", "HOME=/home/bob\necho ~{/src,root} ~root/x ~root:x ~:x\nx=~root:~:~root/a:~nope; echo $x\nx=~; echo ${x//~/~root}\nxx=~root:~:~ env | grep xx=\necho {~,~root}/pwd \\{~,~root}/pwd \"\"{~,~root}/pwd\na=(~root \"~root\" ~root/); echo \"${a[@]}\"; compgen -A user | grep -x root"},
	{"((( that is not arithmetic opens three subshells", "x=`(((echo a) ; (echo b) ) | (read l; echo $l)) 2>/dev/null`; echo \"$x\"; y=$(((echo c) ) ); echo $y $(((1+2)))"},
	{"a function defined in a pipeline is a stage of it, not its body", "echo hello | potato() { echo abc; } | echo ha; echo st=$?; potato; g() { echo G; } && echo and; g; h() (echo H) || echo or; h"},
	{"bash -c ends with 127 at a syntax error inside $(...), even in eval", "echo a\neval 'echo $(if true)'\necho never"},
	{"an array literal inside an array literal drops its line with status 1", "echo x; a=( 1 b=() 2 )\necho st=$? len=${#a[@]}\na=( inside=() ); echo never"},
	{"n>&m- on a builtin, function or block leaves m closed (bash's bug), on a utility or subshell not", "exec 7>f7; : 6>&7-; echo w1 >&7; echo st=$?\nexec 7>f7; f(){ :; }; f 6>&7-; echo w2 >&7; echo st=$?\nexec 7>f7; { :; } 6>&7-; echo w3 >&7; echo st=$?\nexec 7>f7; cat /dev/null 6>&7-; echo w4 >&7; echo st=$?\nexec 7>f7; ( : ) 6>&7-; echo w5 >&7; echo st=$?; cat f7"},
	{"SHELLOPTS and BASHOPTS in the environment set the options they list in a child bash", "export SHELLOPTS; set -x; echo 1; bash -c 'echo 2; echo $SHELLOPTS; bash -c \"echo 3\"' 2>&1; set +x; export BASHOPTS; shopt -s nullglob; bash -c 'echo [n]o*match; shopt -p nullglob'"},
	{"a carriage return and bytes that are not UTF-8 are characters of a word", "printf 'echo\\rTEST\\necho ok\\r\\n' > crlf.sh; bash crlf.sh; echo st=$?; printf 'echo \\xbc \"\\xbc\" $\\x27\\xbc\\x27 \\x27\\xbc\\x27 | od -An -tx1\\n' > raw.sh; bash raw.sh; eval $'x=a\\xffb\\r'; echo \"${#x}\"; echo μ | sed 's/\\xce//g' > cut.sh; echo 'echo μ' | sed 's/\\xce//' > cut.sh; bash cut.sh | od -An -tx1"},
	{"diff compares directories: the files of one name, Only in, -r and -q", "mkdir -p a/sub b/sub a/onlya a/x; printf '1\\n2\\n' > a/f; printf '1\\n3\\n' > b/f; echo x > a/same; echo x > b/same; echo y > a/sub/g; echo z > b/sub/g; echo o > b/onlyb; echo q > b/x\ndiff a b; echo rc=$?; diff -r a b; echo rc=$?; diff -ru a b | grep -v '^[-+][-+][-+]'; diff -rq a b; echo rc=$?; diff a/f b; echo rc=$?\ncp -r a c; diff -r a c && echo same; diff a nonexist; echo rc=$?"},
	{"${a[]} is a bad substitution, ${a[ ]} is element 0", "a=(1 2); echo ${a[ ]}; (echo ${a[]}); echo st=$?"},
	{"history keeps the list a non-interactive bash keeps: -r, -n, -w, -a, HISTSIZE, HISTFILESIZE", "echo 'cmd old' > tmp; HISTFILE=tmp; history -c; history -w; grep -c old tmp; printf 'cmd orig%s\\n' {1..10} > tmp; history -r; history -r; history | grep -c orig; cp tmp tmp2; printf 'cmd new%s\\n' {1..3} >> tmp2; history -c; history -r; HISTFILE=tmp2 history -n; history | grep -c new; history -s a b; history -w out; tail -2 out; history -c; history -s x; history; HISTSIZE=5; history -r; history | wc -l; HISTFILESIZE=4; wc -l < tmp; history -r nonexist; echo st=$?"},
	{"bash -i records its commands in the history list, which fc -l lists and HISTFILE keeps", "printf 'echo %s\\n' {1..3} > tmp; printf 'HISTFILE=tmp\\nhistory -c\\nhistory -r\\n# note\\nfc -l\\nfc -ln -3 -2\\nfc -lr 3 2\\nset +o history\\necho off >/dev/null\\nset -o history\\necho $- | grep -c i\\n' | bash --norc -i 2>/dev/null; tail -3 tmp; bash -i -c 'echo $HISTFILE' < /dev/null 2>/dev/null | sed 's|.*/||'"},
	{"bash -i: --rcfile first, PROMPT_COMMAND before each command line with $? kept, an error ends the line only", "printf 'echo RC\\n' > rc; bash --rcfile rc -i -c 'set -u; echo before; echo $x; echo after\\necho line2' 2>/dev/null; printf 'echo one\\nexit 42\\necho two\\n' > rc2; bash --rcfile rc2 -i -c 'echo never' 2>/dev/null; echo st=$?; printf 'f() { echo last=$?; }\\nPROMPT_COMMAND=f\\n( exit 42 )\\necho ok\\nPROMPT_COMMAND=\"echo P \\\\$(( 1 / 0 ))\"\\necho two\\n' | PS1= bash --rcfile /dev/null -i 2>/dev/null; history f; echo st=$?"},
	{"set -o history records the lines a script runs; \\! is the history number, \\l tty; tty says not a tty", "set -o history # on\nPS1='foo \\! \\l bar'\nhistory -c # clear\necho \"${PS1@P}\" | cat\n# a comment line\necho \"_${PS1@P}\"; history\ntty; echo st=$?; tty -s; echo st=$?"},
	{"command time and env time run GNU time: -f, -p, -o, the command's status", "set -o errexit\nif command time -f '%e %M' true; then echo 'supports -f'; fi\nif env time -f '%e' true 2>/dev/null; then echo env; fi\ncommand time -f 'st=%x' -o t.txt false || echo \"rc=$?\"; cat t.txt; command time -p echo hi 2>/dev/null"},
	{"${x/pat/r} never matches a fixed-length pattern with [^]...] (bash's length bug); with * it does", `s=abcd; echo 1 ${s//a[^]]/z} 2 ${s/#[^]]/z} 3 ${s/%[^]]/z} 4 ${s//[!]]/z} 5 ${s//*[^]]/z} 6 ${s//[^]]*/z} 7 ${s#[^]]}; pat='[^]]'; s='ab^cd^'; echo ${s//$pat/z} "${s//"$pat"/z}"`},
	{"history -a without HISTFILE fails on a missing ~/.history (bash creates only a file it names) and the session's lines count as written; history -N is a bad option", "unset HISTFILE; history -s x; history -a; echo st=$?; ls -A; touch .history; history -s y; history -a; echo st=$?; cat .history; history -a new; echo st=$?; ls -A; history -5; echo st=$?; history -- -1"},
	{"a shell that records its lines saves them to HISTFILE at exit (a subshell does not); HISTSIZE cut the list: written over the file", "printf 'set -o history\\necho one\\n(echo sub; exit 0)\\nexit 3\\n' > s; HISTFILE=hf bash s; echo st=$?; cat hf; HISTFILE=hf HISTSIZE=1 bash -c $'set -o history\\necho a\\necho b'; cat hf; HISTFILE=hf2 bash -c 'echo no history'; ls"},
	{"set -o history with no line entered loads the history as bash's load_history (HISTSIZE 500 or inherited stifles, HISTFILESIZE cuts the file, HISTFILE read); shopt -o history too", "HISTSIZE=1 bash -c 'set -o history; history -s q; history -s r; history; echo $HISTFILESIZE'; HISTSIZE=1 bash -c 'history -s q; history -s r; set -o history; history'; printf '1\\n2\\n3\\n' > hf; HISTFILE=hf HISTSIZE=1 bash -c $'set -o history\\necho a\\necho b'; cat hf; printf '1\\n2\\n3\\n' > hf; HISTFILE=hf bash -c $'set -o history; set -o history\\nhistory\\nshopt -u -o history; shopt -s -o history; echo $HISTSIZE $HISTFILESIZE'; cat hf"},
	{"bash -i loads HISTFILE cut to HISTFILESIZE and appends its lines at exit (histappend, or the list over the file when HISTSIZE cut it); \\! in ${PS1@P} is the running line's number", "printf 'old1\\nold2\\nold3\\n' > hist; printf 'echo \"${PS1@P}\"\\nhistory\\nfalse\\n' | HISTFILE=$PWD/hist PS1='[\\!]' HISTFILESIZE=2 bash --norc -i 2>/dev/null; cat hist; printf 'shopt -s histappend\\necho x\\n' | HISTFILE=$PWD/hist HISTSIZE=1 bash --norc -i 2>/dev/null; cat hist; bash -c 'PS1=\"\\!\"; echo ${PS1@P}; history -s a; echo ${PS1@P}; set -o history; echo ${PS1@P}\necho ${PS1@P}'"},
	{"an array literal before a command is its words expanded, quotes removed", "H=/h; x=1; B=(\"x y\" \"a  b\" $H 'q' a\\ b) printenv B; B=(\"x y\") bash -c 'echo $B'; C=([k]=\"v w\") printenv C; D=($x \"$x\" ${x}z) printenv D; E=(*) printenv E; B=( ) printenv B; B=( ${x:-a b} $(echo  a   b) ) printenv B; B=(a\nb) printenv B"},
	{"env -i, -u and NAME=VALUE make the command's environment", `X=1 Y=2; export X Y; env -i sh -c 'echo "x=$X"'; env -i env; env -i A=b env; env -u X sh -c 'echo "$X,$Y"'; env A=1 B=2 sh -c 'echo $A$B'; env -i A=1 printenv; env -i echo hi; X=3 env -i env; env -u X env | grep -c X=; env -uY printenv Y; echo $?; env --unset=X -i Z=1 env`},
	{"SIGKILL ends the shell with 137 and runs no EXIT trap", `bash -c 'trap "echo trap" EXIT; kill -9 $BASHPID; echo no'; echo rc=$?; bash -c 'trap "echo T" EXIT; kill -s KILL $BASHPID'; echo rc=$?; trap "echo outer" EXIT; (trap "echo sub" EXIT; kill -KILL $BASHPID; echo no); echo sub=$?; bash -c 'trap "echo T" EXIT; kill -TERM $BASHPID'; echo rc=$?; kill -9 $$; echo never`},
	{"bash -i at exit appends the lines of its session to HISTFILE (history -c and -d count them off), not the list over the file", "printf 'a\\nb\\nc\\n' > h5; printf 'history -c\\necho y\\n' | HISTFILE=$PWD/h5 bash --norc -i 2>/dev/null; cat h5; printf 'a\\nb\\nc\\n' > h5; printf 'history -d 1\\necho y\\n' | HISTFILE=$PWD/h5 bash --norc -i 2>/dev/null; cat h5"},
	{"an assignment through a circular nameref fails", "typeset -n ref1=ref2\ntypeset -n ref2=ref1\necho defined $?\nref1=z\necho mutated $?\nx=1; echo x $?"},
}

// TestShellFixes compares the sandbox with bash on shellFixes.
func TestShellFixes(t *testing.T) {
	r := newOilsRunner(t)
	for _, tc := range shellFixes {
		t.Run(tc.name, func(t *testing.T) {
			want, got := r.inBash(tc.script), r.inSandbox(tc.script)
			if want.stdout != got.stdout || want.status != got.status {
				t.Errorf("%s\nsandbox: %q status %d (stderr %q)\nbash:    %q status %d (stderr %q)",
					tc.script, got.stdout, got.status, got.stderr, want.stdout, want.status, want.stderr)
			}
		})
	}
}
