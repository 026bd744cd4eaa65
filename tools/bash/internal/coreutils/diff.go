package coreutils

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// maxDiffLines bounds the lines diff compares (each side).
const maxDiffLines = 200_000

// diffOpts are diff's settings.
type diffOpts struct {
	unified       bool
	context       int
	brief         bool
	reportSame    bool
	icase, ispace bool
	iallspace     bool
	labels        []string
	recursive     bool
	optArgs       []string // the options as given, for diff -r's headers
}

// diffCmd compares two files line by line: diff [-u] [-U N] [-q] [-s]
// [-i] [-b] [-w] [-r] [--label L] FILE1 FILE2 (either may be "-", or a
// directory: see diffDirs). Exit 0 when they are the same, 1 when they
// differ, 2 on trouble.
func diffCmd(c *cmd, args []string) int {
	o := diffOpts{context: 3}
	var fixed []string
	for _, a := range args {
		if strings.HasPrefix(a, "-U") && len(a) > 2 {
			fixed = append(fixed, "-U", a[2:])
			continue
		}
		fixed = append(fixed, a)
	}
	files, st, ok := c.flags(fixed, "UL", 2, func(f, v string) error {
		switch f {
		case "-u":
			o.unified = true
		case "-U", "--unified":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("invalid context length %s", quote(v))
			}
			o.unified, o.context = true, n
		case "-q", "--brief":
			o.brief = true
		case "-s", "--report-identical-files":
			o.reportSame = true
		case "-i", "--ignore-case":
			o.icase = true
		case "-b", "--ignore-space-change":
			o.ispace = true
		case "-w", "--ignore-all-space":
			o.iallspace = true
		case "-L", "--label":
			o.labels = append(o.labels, v)
		case "-r", "--recursive":
			o.recursive = true
		case "-a", "--text", "-N", "--new-file", "--color", "--strip-trailing-cr", "-d", "--minimal", "-B", "--ignore-blank-lines":
		default:
			if strings.HasPrefix(f, "--color") {
				return nil
			}
			return errUnknownFlag
		}
		return nil
	})
	if !ok {
		return st
	}
	if len(files) != 2 {
		return c.errf(2, "missing operand: diff FILE1 FILE2")
	}
	if len(args) >= 2 && args[len(args)-2] == files[0] && args[len(args)-1] == files[1] {
		o.optArgs = args[:len(args)-2]
	}
	var isDir [2]bool
	for i, f := range files {
		if !isStdin(f) && c.env.FS != nil {
			info, err := c.env.FS.Stat(c.ctx, c.abs(f))
			if err != nil {
				return c.fileErr(2, f, err)
			}
			isDir[i] = info.IsDir()
		}
	}
	switch {
	case isDir[0] && isDir[1]:
		return c.done(c.diffDirs(&o, files[0], files[1]))
	case isDir[0]:
		// DIR FILE compares DIR/FILE's name with FILE
		files[0] = path.Join(files[0], path.Base(files[1]))
	case isDir[1]:
		files[1] = path.Join(files[1], path.Base(files[0]))
	}
	return c.done(c.diffFiles(&o, [2]string{files[0], files[1]}, ""))
}

// diffDirs compares two directories as GNU diff does: the files of the
// same name, "Only in" the others, subdirectories with -r (else "Common
// subdirectories"). It returns the status (0 same, 1 differ, 2 trouble).
func (c *cmd) diffDirs(o *diffOpts, d1, d2 string) int {
	list := func(d string) (map[string]bool, bool) {
		infos, err := c.env.FS.ReadDir(c.ctx, c.abs(d))
		if err != nil {
			c.fileErr(2, d, err)
			return nil, false
		}
		m := map[string]bool{}
		for _, fi := range infos {
			m[fi.Name()] = fi.IsDir()
		}
		return m, true
	}
	m1, ok1 := list(d1)
	m2, ok2 := list(d2)
	if !ok1 || !ok2 {
		return 2
	}
	var names []string
	for n := range m1 {
		names = append(names, n)
	}
	for n := range m2 {
		if _, ok := m1[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	status := 0
	worse := func(st int) {
		status = max(status, st)
	}
	for _, n := range names {
		dir1, in1 := m1[n]
		dir2, in2 := m2[n]
		p1, p2 := path.Join(d1, n), path.Join(d2, n)
		switch {
		case !in2:
			c.out.WriteString("Only in " + d1 + ": " + n + "\n")
			worse(1)
		case !in1:
			c.out.WriteString("Only in " + d2 + ": " + n + "\n")
			worse(1)
		case dir1 && dir2:
			if o.recursive {
				worse(c.diffDirs(o, p1, p2))
			} else {
				c.out.WriteString("Common subdirectories: " + p1 + " and " + p2 + "\n")
			}
		case dir1 || dir2:
			kind := func(d bool) string {
				if d {
					return "directory"
				}
				return "regular file"
			}
			c.out.WriteString("File " + p1 + " is a " + kind(dir1) + " while file " + p2 + " is a " + kind(dir2) + "\n")
			worse(1)
		default:
			header := strings.Join(append(append([]string{"diff"}, o.optArgs...), p1, p2), " ") + "\n"
			worse(c.diffFiles(o, [2]string{p1, p2}, header))
		}
	}
	return status
}

// diffFiles compares two files (either may be "-"); header, if any, is
// written before their differences (not for -q). It returns the status.
func (c *cmd) diffFiles(o *diffOpts, files [2]string, header string) int {
	var texts [2]string
	var stamps [2]time.Time
	for i, f := range files {
		if !isStdin(f) && c.env.FS != nil {
			info, err := c.env.FS.Stat(c.ctx, c.abs(f))
			if err != nil {
				return c.fileErr(2, f, err)
			}
			stamps[i] = info.ModTime()
		} else {
			stamps[i] = c.now()
		}
		data, err := c.readFile(f)
		if err != nil {
			return c.fileErr(2, f, err)
		}
		texts[i] = string(data)
	}
	a, aNoNL := diffLines(texts[0])
	b, bNoNL := diffLines(texts[1])
	if len(a) > maxDiffLines || len(b) > maxDiffLines {
		return c.errf(2, "files longer than %d lines are not compared", maxDiffLines)
	}
	key := func(s string) string {
		if o.icase {
			s = strings.ToLower(s)
		}
		switch {
		case o.iallspace:
			s = strings.Map(func(r rune) rune {
				if unicode.IsSpace(r) {
					return -1
				}
				return r
			}, s)
		case o.ispace:
			s = strings.Join(strings.Fields(s), " ")
		}
		return s
	}
	ka, kb := make([]string, len(a)), make([]string, len(b))
	for i, l := range a {
		ka[i] = key(l)
	}
	for i, l := range b {
		kb[i] = key(l)
	}
	// The last lines differ when only one lacks its newline.
	if len(a) > 0 && aNoNL != bNoNL {
		ka[len(a)-1] += "\x00nonl"
	}
	if len(b) > 0 && aNoNL != bNoNL {
		kb[len(b)-1] += "\x00nonl-b"
	}
	ops, err := myers(ka, kb, c.hold)
	if err != nil {
		return c.errf(2, "%v", err)
	}
	same := true
	for _, op := range ops {
		if op.kind != ' ' {
			same = false
			break
		}
	}
	if same {
		if o.reportSame {
			c.out.WriteString("Files " + files[0] + " and " + files[1] + " are identical\n")
		}
		return 0
	}
	if o.brief {
		c.out.WriteString("Files " + files[0] + " and " + files[1] + " differ\n")
		return 1
	}
	c.out.WriteString(header)
	lines := func(side byte, i int) (string, bool) {
		if side == '-' {
			return a[i], aNoNL && i == len(a)-1
		}
		return b[i], bNoNL && i == len(b)-1
	}
	if o.unified {
		names := [2]string{files[0], files[1]}
		for i := range min(2, len(o.labels)) {
			names[i] = o.labels[i]
		}
		const stampFormat = "2006-01-02 15:04:05.000000000 -0700"
		if len(o.labels) > 0 {
			fmt.Fprintf(c.out, "--- %s\n", names[0])
		} else {
			fmt.Fprintf(c.out, "--- %s\t%s\n", names[0], stamps[0].Format(stampFormat))
		}
		if len(o.labels) > 1 {
			fmt.Fprintf(c.out, "+++ %s\n", names[1])
		} else {
			fmt.Fprintf(c.out, "+++ %s\t%s\n", names[1], stamps[1].Format(stampFormat))
		}
		for _, h := range hunks(ops, o.context) {
			fmt.Fprintf(c.out, "@@ -%s +%s @@\n", unifiedRange(h.a0, h.a1), unifiedRange(h.b0, h.b1))
			for _, op := range ops[h.from:h.to] {
				var text string
				var noNL bool
				switch op.kind {
				case '-':
					text, noNL = lines('-', op.a)
				case '+':
					text, noNL = lines('+', op.b)
				default:
					text, noNL = lines('-', op.a)
				}
				c.out.WriteString(string(op.kind) + text + "\n")
				if noNL {
					c.out.WriteString("\\ No newline at end of file\n")
				}
			}
		}
		return 1
	}
	// Normal format: each run of changes is one command.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		j := i
		var dels, adds []diffOp
		for j < len(ops) && ops[j].kind != ' ' {
			if ops[j].kind == '-' {
				dels = append(dels, ops[j])
			} else {
				adds = append(adds, ops[j])
			}
			j++
		}
		// Line numbers: where the run sits in each file.
		aStart, bStart := ops[i].a, ops[i].b
		switch {
		case len(adds) == 0:
			fmt.Fprintf(c.out, "%sd%d\n", normalRange(aStart, len(dels)), bStart)
		case len(dels) == 0:
			fmt.Fprintf(c.out, "%da%s\n", aStart, normalRange(bStart, len(adds)))
		default:
			fmt.Fprintf(c.out, "%sc%s\n", normalRange(aStart, len(dels)), normalRange(bStart, len(adds)))
		}
		for _, d := range dels {
			text, noNL := lines('-', d.a)
			c.out.WriteString("< " + text + "\n")
			if noNL {
				c.out.WriteString("\\ No newline at end of file\n")
			}
		}
		if len(dels) > 0 && len(adds) > 0 {
			c.out.WriteString("---\n")
		}
		for _, d := range adds {
			text, noNL := lines('+', d.b)
			c.out.WriteString("> " + text + "\n")
			if noNL {
				c.out.WriteString("\\ No newline at end of file\n")
			}
		}
		i = j
	}
	return 1
}

// diffLines splits a text into lines; noNL reports a last line without
// a newline.
func diffLines(s string) (lines []string, noNL bool) {
	if s == "" {
		return nil, false
	}
	noNL = !strings.HasSuffix(s, "\n")
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n"), noNL
}

// normalRange renders lines start+1 .. start+n as diff's normal format
// does.
func normalRange(start, n int) string {
	if n == 1 {
		return strconv.Itoa(start + 1)
	}
	return fmt.Sprintf("%d,%d", start+1, start+n)
}

// unifiedRange renders a hunk side [lo, hi) as "l,n".
func unifiedRange(lo, hi int) string {
	n := hi - lo
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", lo)
	case 1:
		return strconv.Itoa(lo + 1)
	}
	return fmt.Sprintf("%d,%d", lo+1, n)
}

// diffOp is one line of an edit script: ' ' kept, '-' deleted from a,
// '+' added from b; a and b are the line indexes (for '+', a is where
// the insertion happens in a, and for '-', b likewise).
type diffOp struct {
	kind byte
	a, b int
}

// myers computes a shortest edit script from a to b (Myers' O((N+M)D)
// algorithm), deletions before insertions within a change.
func myers(a, b []string, hold func(int64) error) ([]diffOp, error) {
	n, m := len(a), len(b)
	limit := n + m
	v := make([]int, 2*limit+2)
	var trace [][]int
	off := limit + 1
outer:
	for d := 0; d <= limit; d++ {
		// the trace grows by a copy of v each round: O((N+M)·D)
		if err := hold(int64(len(v)) * 8); err != nil {
			return nil, err
		}
		snapshot := make([]int, len(v))
		copy(snapshot, v)
		trace = append(trace, snapshot)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				break outer
			}
		}
	}
	// Backtrack.
	var ops []diffOp
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		vv := trace[d]
		k := x - y
		var prevK int
		if k == -d || (k != d && vv[off+k-1] < vv[off+k+1]) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := vv[off+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x--
			y--
			ops = append(ops, diffOp{kind: ' ', a: x, b: y})
		}
		if d > 0 {
			if x == prevX {
				ops = append(ops, diffOp{kind: '+', a: x, b: prevY})
			} else {
				ops = append(ops, diffOp{kind: '-', a: prevX, b: y})
			}
		}
		x, y = prevX, prevY
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	// Within each run of changes, put deletions first.
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		j := i
		for j < len(ops) && ops[j].kind != ' ' {
			j++
		}
		run := ops[i:j]
		var dels, adds []diffOp
		for _, op := range run {
			if op.kind == '-' {
				dels = append(dels, op)
			} else {
				adds = append(adds, op)
			}
		}
		aStart, bStart := run[0].a, run[0].b
		for _, op := range run {
			aStart, bStart = min(aStart, op.a), min(bStart, op.b)
		}
		k := i
		for _, op := range dels {
			ops[k] = diffOp{kind: '-', a: op.a, b: bStart}
			k++
		}
		for _, op := range adds {
			ops[k] = diffOp{kind: '+', a: aStart + len(dels), b: op.b}
			k++
		}
		i = j
	}
	return ops, nil
}

// hunk is a unified hunk: ops[from:to], covering a[a0:a1] and b[b0:b1].
type hunk struct {
	from, to       int
	a0, a1, b0, b1 int
}

// hunks groups the changes of ops with n lines of context.
func hunks(ops []diffOp, n int) []hunk {
	var out []hunk
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i >= len(ops) {
			break
		}
		from := max(0, i-n)
		// Extend while the gap of kept lines to the next change is at
		// most 2n.
		j := i
		for {
			for j < len(ops) && ops[j].kind != ' ' {
				j++
			}
			k := j
			for k < len(ops) && ops[k].kind == ' ' {
				k++
			}
			if k < len(ops) && k-j <= 2*n {
				j = k
				continue
			}
			break
		}
		to := min(len(ops), j+n)
		h := hunk{from: from, to: to}
		h.a0, h.b0 = -1, -1
		for _, op := range ops[from:to] {
			if op.kind != '+' {
				if h.a0 < 0 {
					h.a0 = op.a
				}
				h.a1 = op.a + 1
			}
			if op.kind != '-' {
				if h.b0 < 0 {
					h.b0 = op.b
				}
				h.b1 = op.b + 1
			}
		}
		if h.a0 < 0 {
			// Only insertions: the range is empty, after the line before.
			h.a0 = ops[from].a
			h.a1 = h.a0
		}
		if h.b0 < 0 {
			h.b0 = ops[from].b
			h.b1 = h.b0
		}
		out = append(out, h)
		i = to
	}
	return out
}
