package shell

import (
	"strconv"
	"strings"
	"time"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/timefmt"
	"github.com/demiurge-dev/demiurge/tools/bash/vfs"
)

// The history list of a non-interactive bash: empty at start, filled by
// history -r/-n/-s (and by the script's own commands under set -o
// history), listed and edited by history and fc, kept in the sandbox's
// files through HISTFILE. HISTSIZE stifles it, HISTFILESIZE truncates
// the file when assigned, HISTTIMEFORMAT adds times to listings and
// timestamps to the file.

// histEntry is one line of the history list; when is its Unix time (0:
// none, as for lines read from a file without timestamps).
type histEntry struct {
	line string
	when int64
}

// history is a shell's history list. A subshell shares its parent's
// until it changes it (owner is the shell that charged its bytes).
type history struct {
	owner   uint32
	charge  int64
	entries []histEntry
	// base is the number of the first entry (readline's history_base).
	base int
	// session is how many lines this shell added (not read from the
	// file), bash's history_lines_this_session: history -a appends the
	// last ones the list still holds. Stifling does not lower it, so an
	// interactive shell's exit can tell the list was cut (saveHistory).
	session int
	// inFile is how many lines of the history file this shell has seen
	// (history -n reads the ones after).
	inFile int
	// max is HISTSIZE when it stifles the list (-1: unlimited).
	max int
	// lastAdded: the last entry was added by a command (history -s, a
	// line fc ran), bash's hist_last_line_added, which fc's editing
	// form takes for its own line and deletes.
	lastAdded bool
	// shared: a subshell forked since this shell last changed it holds
	// it too (set by the owner only), so the owner changes a copy
	shared bool
}

// histFork marks the history shared with a subshell being forked.
func (sh *shell) histFork() {
	// (only the first fork writes: the subshells that read it start
	// after their fork returns)
	if h := sh.hist; h != nil && h.owner == sh.id && !h.shared {
		h.shared = true
	}
}

func newHistory() *history { return &history{base: 1, max: -1} }

// histWritable returns the shell's history for changing it: a copy when
// it belongs to another shell, charged to this one.
func (sh *shell) histWritable() *history {
	h := sh.hist
	if h == nil {
		h = newHistory()
		h.owner = sh.id
		sh.hist = h
		return h
	}
	if h.owner == sh.id && !h.shared {
		return h
	}
	if h.owner == sh.id {
		// a subshell may be reading it: this shell changes a copy, and
		// gives back what the old one was charged
		sh.r.budget.Release(h.charge)
		sh.held -= h.charge
	}
	c := *h
	c.shared = false
	c.entries = append([]histEntry(nil), h.entries...)
	c.owner = sh.id
	c.charge = 0
	sh.hist = &c
	sh.histRecharge()
	return &c
}

// histRecharge charges the budget for the history's present size.
func (sh *shell) histRecharge() {
	h := sh.hist
	var n int64
	for _, e := range h.entries {
		n += int64(len(e.line)) + 32
	}
	delta := n - h.charge
	if delta > 0 {
		sh.chargeBytes(delta)
	} else if delta < 0 {
		sh.r.budget.Release(-delta)
		sh.held += delta
	}
	h.charge = n
}

// histAdd adds a line to the end of the list, dropping the oldest past
// HISTSIZE.
func (sh *shell) histAdd(line string, when int64) {
	h := sh.histWritable()
	if h.max == 0 {
		return
	}
	sh.chargeBytes(int64(len(line)) + 32)
	h.charge += int64(len(line)) + 32
	h.entries = append(h.entries, histEntry{line, when})
	h.session++
	sh.histStifle(false)
}

// histStifle drops the oldest entries past HISTSIZE. When HISTSIZE is
// assigned, readline's stifle_history makes the number of the first
// entry left the count of entries dropped (not added to it); when an
// entry is added, each one dropped adds one.
func (sh *shell) histStifle(assigned bool) {
	h := sh.hist
	if h.max < 0 || len(h.entries) <= h.max {
		return
	}
	drop := len(h.entries) - h.max
	h.entries = append(h.entries[:0:0], h.entries[drop:]...)
	if assigned {
		h.base = drop
	} else {
		h.base += drop
	}
	sh.histRecharge()
}

// histSizeChanged reacts to an assignment (or unset) of HISTSIZE or
// HISTFILESIZE, as bash's sv_histsize does.
func (sh *shell) histSizeChanged(name string) {
	val, ok := sh.varValue(name)
	n, err := strconv.Atoi(strings.TrimSpace(val))
	if name == "HISTSIZE" {
		h := sh.histWritable()
		if !ok || err != nil || n < 0 {
			h.max = -1
			return
		}
		h.max = n
		sh.histStifle(true)
		return
	}
	if !ok || err != nil || n < 0 {
		return
	}
	file, _ := sh.varValue("HISTFILE")
	if file == "" {
		return
	}
	lines, ok := sh.histReadFile(file, false)
	if !ok {
		return
	}
	// keep the last n entries, each with its timestamp line
	if cut := histCut(lines, n); cut > 0 {
		sh.histWriteFile(file, lines[cut:], histOverwrite)
	}
	if h := sh.hist; h != nil && n < h.inFile {
		sh.histWritable().inFile = n
	}
}

// histCut is the index of the first line to keep when a history file's
// lines are cut down to its last n entries (a timestamp line stays with
// the line after it).
func histCut(lines []string, n int) int {
	entries := 0
	for i := len(lines) - 1; i >= 0; i-- {
		if isHistStamp(lines[i]) {
			continue
		}
		if entries == n {
			// the entry at i is dropped; keep its stamp out too
			return i + 1
		}
		entries++
	}
	return 0
}

// isHistStamp reports whether a history file's line is a timestamp
// (#1700000000).
func isHistStamp(s string) bool {
	if len(s) < 2 || s[0] != '#' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// histReadFile reads a history file's lines; report says whether an
// error is reported.
func (sh *shell) histReadFile(file string, report bool) ([]string, bool) {
	fsys := sh.r.cfg.FS
	if fsys == nil {
		return nil, false
	}
	data, err := fsys.ReadFile(sh.r.ctx, vfs.Abs(sh.dir, file))
	if err != nil {
		if report {
			sh.errorf("history: %s: %s", file, errReason(err))
		}
		return nil, false
	}
	sh.chargeBytes(int64(len(data)))
	defer func() {
		sh.r.budget.Release(int64(len(data)))
		sh.held -= int64(len(data))
	}()
	text := strings.TrimSuffix(string(data), "\n")
	if text == "" {
		return nil, true
	}
	return strings.Split(text, "\n"), true
}

// How histWriteFile writes a history file.
const (
	histOverwrite  = iota
	histAppend     // (created when missing, as bash's maybe_append_history does)
	histAppendOnly // readline's append_history alone: a missing file is a failure
)

// histWriteFile writes (or appends) lines to a history file; as
// readline's write_history, it reports no error, it fails.
func (sh *shell) histWriteFile(file string, lines []string, mode int) bool {
	fsys := sh.r.cfg.FS
	if fsys == nil || file == "" {
		return false
	}
	flag := vfs.O_WRONLY | vfs.O_CREATE | vfs.O_TRUNC
	switch mode {
	case histAppend:
		flag = vfs.O_WRONLY | vfs.O_CREATE | vfs.O_APPEND
	case histAppendOnly:
		flag = vfs.O_WRONLY | vfs.O_APPEND
	}
	f, err := fsys.Open(sh.r.ctx, vfs.Abs(sh.dir, file), flag, 0o600)
	if err != nil {
		return false
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	_, err = f.Write([]byte(b.String()))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err == nil
}

// histFileLines is the history's entries from index from as a history
// file's lines, with timestamps when HISTTIMEFORMAT is set.
func (sh *shell) histFileLines(from int) []string {
	stamps := false
	if _, ok := sh.varValue("HISTTIMEFORMAT"); ok {
		stamps = true
	}
	var out []string
	for _, e := range sh.hist.entries[from:] {
		if stamps && e.when != 0 {
			out = append(out, "#"+strconv.FormatInt(e.when, 10))
		}
		out = append(out, e.line)
	}
	return out
}

// histLoad adds the entries of a history file's lines from its from-th
// entry on, and returns how many entries the file holds.
func (sh *shell) histLoad(lines []string, from int) int {
	n := 0
	var when int64
	for _, l := range lines {
		if isHistStamp(l) {
			when, _ = strconv.ParseInt(l[1:], 10, 64)
			continue
		}
		if n >= from {
			sh.histAdd(l, when)
		}
		when = 0
		n++
	}
	return n
}

// histStamp is the time of an entry added now: bash keeps one only
// while HISTTIMEFORMAT is set.
func (sh *shell) histStamp() int64 {
	if _, ok := sh.varValue("HISTTIMEFORMAT"); ok {
		return sh.now().Unix()
	}
	return 0
}

// histTime formats an entry's time for a listing under HISTTIMEFORMAT.
func (sh *shell) histTime(e histEntry, format string) string {
	if e.when == 0 {
		return "??"
	}
	return timefmt.Strftime(format, time.Unix(e.when, 0).In(sh.now().Location()))
}

func builtinHistory(sh *shell, args []string) int {
	var a, c, d, n, p, r, s, w bool
	var delArg string
	i := 1
	for ; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			i++
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			break
		}
		// (-N is a bad option, as bash's getopt reads it: history -- -N
		// lists N lines)
		for j := 1; j < len(arg); j++ {
			switch arg[j] {
			case 'a':
				a = true
			case 'c':
				c = true
			case 'n':
				n = true
			case 'p':
				p = true
			case 'r':
				r = true
			case 's':
				s = true
			case 'w':
				w = true
			case 'd':
				d = true
				if j+1 < len(arg) {
					delArg = arg[j+1:]
				} else if i+1 < len(args) {
					i++
					delArg = args[i]
				} else {
					sh.errorf("history: -d: option requires an argument")
					sh.usageLine("history: usage: history [-c] [-d offset] [n] or history -anrw [filename] or history -ps arg [arg...]")
					return 2
				}
				j = len(arg)
			default:
				sh.errorf("history: -%c: invalid option", arg[j])
				sh.usageLine("history: usage: history [-c] [-d offset] [n] or history -anrw [filename] or history -ps arg [arg...]")
				return 2
			}
		}
	}
	list := args[i:]
	count := 0
	for _, f := range []bool{a, n, r, w} {
		if f {
			count++
		}
	}
	if count > 1 {
		sh.errorf("history: cannot use more than one of -anrw")
		return 1
	}
	if c {
		h := sh.histWritable()
		h.entries = nil
		h.session = 0
		sh.histRecharge()
		if len(list) == 0 {
			return 0
		}
	}
	switch {
	case s:
		if len(list) > 0 {
			sh.histAdd(strings.Join(list, " "), sh.histStamp())
			sh.hist.lastAdded = true
		}
		return 0
	case p:
		// history expansion is off in a non-interactive shell: the
		// words come back as they are
		for _, w := range list {
			if !sh.out("history", w+"\n") {
				return 1
			}
		}
		return 0
	case d:
		return sh.histDelete(delArg)
	case !a && !n && !r && !w && !c:
		return sh.histList(list)
	}
	var file string
	appendMode := histAppend
	if len(list) > 0 {
		file = list[0]
	} else if f, ok := sh.varValue("HISTFILE"); ok {
		file = f
	} else {
		// readline's default history file; an empty name fails. bash
		// creates a missing file it appends to only when it has a
		// name (maybe_append_history), so history -a fails here
		home, _ := sh.varValue("HOME")
		file = strings.TrimSuffix(home, "/") + "/.history"
		appendMode = histAppendOnly
	}
	switch {
	case a:
		// bash's maybe_append_history: the session's lines the list
		// still holds, counted as read from the file and no longer the
		// session's even when the write failed
		h := sh.histWritable()
		status := 0
		if h.session > 0 {
			if len(h.entries) > 0 {
				h.session = min(h.session, len(h.entries))
			}
			lines := sh.histFileLines(len(h.entries) - min(h.session, len(h.entries)))
			if !sh.histWriteFile(file, lines, appendMode) {
				status = 1
			}
			h.inFile += h.session
		}
		h.session = 0
		return status
	case w:
		h := sh.histWritable()
		if !sh.histWriteFile(file, sh.histFileLines(0), histOverwrite) {
			return 1
		}
		h.inFile = len(h.entries)
	case r, n:
		lines, ok := sh.histReadFile(file, false)
		if !ok {
			return 1
		}
		h := sh.histWritable()
		session := h.session
		from := 0
		if n {
			from = h.inFile
		}
		total := sh.histLoad(lines, from)
		h = sh.hist
		if r {
			// lines read from the file are not this session's
			h.session = session
		}
		h.inFile = total
	}
	return 0
}

// histList is history [N]: the list, or its last N entries.
func (sh *shell) histList(list []string) int {
	limit := -1
	if len(list) > 0 {
		v, err := strconv.Atoi(list[0])
		if err != nil {
			sh.errorf("history: %s: numeric argument required", list[0])
			return 1
		}
		if len(list) > 1 {
			return sh.discard("history: too many arguments")
		}
		limit = max(v, -v)
	}
	h := sh.hist
	if h == nil {
		return 0
	}
	from := 0
	if limit >= 0 && limit < len(h.entries) {
		from = len(h.entries) - limit
	}
	format, _ := sh.varValue("HISTTIMEFORMAT")
	var b strings.Builder
	for i, e := range h.entries[from:] {
		b.WriteString(padLeft(strconv.Itoa(from+i+h.base), 5))
		b.WriteString("  ")
		if format != "" {
			b.WriteString(sh.histTime(e, format))
		}
		b.WriteString(e.line)
		b.WriteByte('\n')
	}
	if !sh.out("history", b.String()) {
		return 1
	}
	return 0
}

func padLeft(s string, n int) string {
	if len(s) >= n {
		return s
	}
	return strings.Repeat(" ", n-len(s)) + s
}

// histDelete is history -d OFFSET or -d START-END.
func (sh *shell) histDelete(arg string) int {
	h := sh.histWritable()
	length := len(h.entries)
	outOfRange := func(s string) int {
		sh.errorf("history: %s: history position out of range", s)
		return 1
	}
	// position converts an offset as history lists it (or from the end
	// when negative) to an index
	position := func(s string) (int, bool) {
		v, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return 0, false
		}
		if strings.HasPrefix(strings.TrimSpace(s), "-") && v < 0 {
			v += length
		} else {
			v -= h.base
		}
		return v, v >= 0 && v < length
	}
	rest := strings.TrimPrefix(arg, "-")
	if k := strings.IndexByte(rest, '-'); k >= 0 {
		startArg := arg[:len(arg)-len(rest)+k]
		endArg := rest[k+1:]
		if _, err := strconv.Atoi(startArg); err != nil {
			return outOfRange(arg)
		}
		if _, err := strconv.Atoi(endArg); err != nil {
			return outOfRange(arg)
		}
		start, ok := position(startArg)
		if !ok {
			return outOfRange(startArg)
		}
		end, ok := position(endArg)
		if !ok {
			return outOfRange(endArg)
		}
		if end < start {
			return 0
		}
		sh.histRemove(start, end+1)
		return 0
	}
	at, ok := position(arg)
	if !ok {
		return outOfRange(arg)
	}
	sh.histRemove(at, at+1)
	return 0
}

// histRemove removes the entries [from, to).
func (sh *shell) histRemove(from, to int) {
	h := sh.hist
	// bash counts each deletion off the session's lines, whichever
	// line it was (the count may go below zero)
	h.session -= to - from
	h.entries = append(h.entries[:from:from], h.entries[to:]...)
	sh.histRecharge()
}

const fcUsage = "fc: usage: fc [-e ename] [-lnr] [first] [last] or fc -s [pat=rep] [command]"

// fcNumber reports whether s is a number as fc takes one (-N too).
func fcNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// fc's special results of fcIndex.
const (
	fcInvalid  = -2
	fcNotFound = -3
)

// fcIndex is bash's fc_gethnum: the index a history specification (a
// number, -N from the end, or the start of a command line) names; first
// says it is the first of a range.
func (sh *shell) fcIndex(spec string, listing, first bool) int {
	h := sh.hist
	last := sh.fcLast()
	if last < 0 {
		return -1
	}
	if fcNumber(spec) {
		v, _ := strconv.Atoi(spec)
		switch {
		case v < 0:
			return max(v+last+1, 0)
		case v == 0:
			if strings.HasPrefix(spec, "-") {
				if listing {
					return max(len(h.entries)-1, 0)
				}
				return fcInvalid
			}
			return last
		}
		// (bash compares with the last entry fc deals with, so that
		// naming that very entry counts as out of range)
		v -= h.base
		if v < 0 || v >= last {
			if first {
				return 0
			}
			return last
		}
		return v
	}
	for j := min(last, len(h.entries)-1); j >= 0; j-- {
		if strings.HasPrefix(h.entries[j].line, spec) {
			return j
		}
	}
	return fcNotFound
}

// fcLast is bash's last_hist: the index of the last entry fc deals with,
// which is not fc's own line when the script's lines are recorded (set
// -o history) nor a line a command added (history -s); below zero when
// there is none.
func (sh *shell) fcLast() int {
	h := sh.hist
	n := len(h.entries)
	last := n
	if sh.histRemember && sh.histOff == 0 {
		last--
	}
	if h.lastAdded {
		last--
	}
	if last == n {
		last = n - 1
	}
	return last
}

func builtinFc(sh *shell, args []string) int {
	numbering, reverse, listing, execute := true, false, false, false
	ename, haveEname := "", false
	i := 1
opts:
	for ; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			i++
			break
		}
		if len(arg) < 2 || arg[0] != '-' || fcNumber(arg) {
			break
		}
		for j := 1; j < len(arg); j++ {
			switch arg[j] {
			case 'n':
				numbering = false
			case 'l':
				listing = true
			case 'r':
				reverse = true
			case 's':
				execute = true
			case 'e':
				if j+1 < len(arg) {
					ename = arg[j+1:]
				} else if i+1 < len(args) {
					i++
					ename = args[i]
				} else {
					sh.errorf("fc: -e: option requires an argument")
					sh.usageLine(fcUsage)
					return 2
				}
				haveEname = true
				continue opts
			default:
				sh.errorf("fc: -%c: invalid option", arg[j])
				sh.usageLine(fcUsage)
				return 2
			}
		}
	}
	list := args[i:]
	if haveEname && ename == "-" {
		execute = true
	}
	if sh.hist == nil {
		sh.histWritable()
	}
	if execute {
		return sh.fcExecute(list)
	}
	h := sh.hist
	n := len(h.entries)
	last := max(sh.fcLast(), 0)
	realLast := max(n-1, 0)
	var beg, end int
	if len(list) > 0 {
		beg = sh.fcIndex(list[0], listing, true)
		switch {
		case len(list) > 1:
			end = sh.fcIndex(list[1], listing, false)
		case beg == realLast && listing:
			end = realLast
		case listing:
			end = last
		default:
			end = beg
		}
	} else if listing {
		end = last
		beg = max(end-16+1, 0)
	} else {
		beg, end = last, last
	}
	switch {
	case beg == fcInvalid || end == fcInvalid:
		sh.errorf("fc: history specification out of range")
		return 1
	case beg == fcNotFound || end == fcNotFound:
		sh.errorf("fc: no command found")
		return 1
	}
	beg, end = max(beg, 0), max(end, 0)
	if !listing && h.lastAdded && n > 0 {
		// "the fc command that caused the editing shall not be entered
		// into the history": bash drops the last line it added, even
		// when that was history -s's (fc_builtin)
		h = sh.histWritable()
		sh.histRemove(n-1, n)
		n = len(h.entries)
		lastHist := last
		if beg == end && end == lastHist && lastHist >= n {
			beg, end = lastHist-1, lastHist-1
			lastHist--
		}
		if lastHist >= n {
			lastHist--
		}
		if end >= lastHist {
			end = lastHist
		} else if beg >= lastHist {
			beg = lastHist
		}
		beg, end = max(beg, 0), max(end, 0)
	}
	if end < beg {
		beg, end = end, beg
		reverse = true
	}
	var b strings.Builder
	emit := func(k int) {
		if k >= n {
			return
		}
		if listing {
			if numbering {
				b.WriteString(strconv.Itoa(k + h.base))
			}
			b.WriteString("\t ")
		}
		b.WriteString(h.entries[k].line)
		b.WriteByte('\n')
	}
	if reverse {
		for k := end; k >= beg; k-- {
			emit(k)
		}
	} else {
		for k := beg; k <= end; k++ {
			emit(k)
		}
	}
	if listing {
		if !sh.out("fc", b.String()) {
			return 1
		}
		return 0
	}
	return sh.fcEdit(ename, haveEname, b.String())
}

// fcExecute is fc -s [pat=rep ...] [command]: the command again, with
// the replacements made.
func (sh *shell) fcExecute(list []string) int {
	type repl struct{ pat, rep string }
	var repls []repl
	for len(list) > 0 {
		pat, rep, ok := strings.Cut(list[0], "=")
		if !ok {
			break
		}
		repls = append(repls, repl{pat, rep})
		list = list[1:]
	}
	spec := ""
	k := -1
	if len(list) > 0 {
		spec = list[0]
		k = sh.fcIndex(spec, false, true)
	} else {
		k = sh.fcLast()
	}
	if k < 0 || k >= len(sh.hist.entries) {
		sh.errorf("fc: no command found")
		return 1
	}
	command := sh.hist.entries[k].line
	for _, r := range repls {
		// bash's fc_dosubs: every occurrence, left to right
		if r.pat != "" {
			command = strings.ReplaceAll(command, r.pat, r.rep)
		}
	}
	sh.writeErr(command + "\n")
	// the command takes the place of the last entry (fc_replhist)
	h := sh.histWritable()
	if len(h.entries) > 0 {
		h.entries[len(h.entries)-1] = histEntry{command, sh.histStamp()}
		sh.histRecharge()
	}
	// (bash runs it with history off: parse_and_execute's SEVAL_NOHIST)
	sh.histOff++
	defer func() { sh.histOff-- }()
	return builtinEval(sh, []string{"eval", "--", command})
}

// fcEdit is fc's editing form: the commands go to a temporary file of
// the sandbox, the editor (a sandbox command: -e NAME, else $FCEDIT,
// $EDITOR, vi) edits it, and what it holds then is echoed and run.
func (sh *shell) fcEdit(ename string, haveEname bool, text string) int {
	fsys := sh.r.cfg.FS
	if fsys == nil {
		sh.errorf("fc: cannot open temp file: no file system")
		return 1
	}
	file := vfs.TmpDir + "/bash-fc." + strconv.FormatInt(sh.pid, 10) + "-" + strconv.FormatUint(uint64(sh.r.ids.Add(1)), 10)
	var lines []string
	if text != "" {
		lines = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	}
	if !sh.histWriteFile(file, lines, histOverwrite) {
		return 1
	}
	defer fsys.Remove(sh.r.ctx, file, false)
	editor := ename
	if !haveEname {
		editor = "${FCEDIT:-${EDITOR:-vi}}"
	}
	sh.histOff++
	st := builtinEval(sh, []string{"eval", "--", editor + " " + file})
	sh.histOff--
	if st != 0 || sh.flow != flowNone {
		return 1
	}
	lines, ok := sh.histReadFile(file, true)
	if !ok {
		return 1
	}
	code := strings.Join(lines, "\n")
	if code == "" {
		return 0
	}
	// bash runs the file with -v on (the commands echo as they are
	// read) and enters them in the history; from then on it records
	// the script's lines as under set -o history (fc_builtin sets
	// remember_on_history and leaves it set)
	sh.histRemember = true
	sh.writeErr(code + "\n")
	for _, l := range lines {
		sh.histAdd(l, sh.histStamp())
		sh.hist.lastAdded = true
	}
	return builtinEval(sh, []string{"eval", "--", code})
}

// histRecord enters the lines of a complete command read from a script
// in the history (set -o history): the lines from offset from to the end
// of the line where the command ends at offset end (its first line
// starting at offset start). A line before the command's (a comment) is
// an entry of its own, a blank line none, and the lines of a command
// that spans several are joined as bash's command-oriented history does.
// It returns the offset up to which lines are read; record false only
// moves it on (history is off).
func (sh *shell) histRecord(text string, from, start, end int, record bool) int {
	if from >= len(text) || start < from {
		return from
	}
	lineEnd := len(text)
	if nl := strings.IndexByte(text[min(end, len(text)):], '\n'); nl >= 0 {
		lineEnd = end + nl
	}
	first := strings.LastIndexByte(text[:start], '\n') + 1
	if first < from {
		first = from
	}
	if !record {
		return min(lineEnd+1, len(text))
	}
	for _, l := range strings.Split(text[from:first], "\n") {
		if strings.TrimSpace(l) != "" {
			sh.histAdd(unescapeRaw(l), sh.histStamp())
			sh.hist.lastAdded = true
		}
	}
	lines := strings.Split(text[first:lineEnd], "\n")
	entry := lines[0]
	heredoc := strings.Contains(text[first:lineEnd], "<<")
	for _, l := range lines[1:] {
		if heredoc {
			entry += "\n" + l
			continue
		}
		if strings.TrimSpace(l) == "" {
			continue
		}
		entry += histDelimiter(entry) + l
	}
	// (text is escapeRawBytes's when it holds raw bytes)
	sh.histAdd(unescapeRaw(entry), sh.histStamp())
	sh.hist.lastAdded = true
	return min(lineEnd+1, len(text))
}

// histDelimiter is what joins the next line of a command to its history
// entry so far: "; ", or a blank where a semicolon cannot go (after an
// operator or a keyword that a command follows).
func histDelimiter(entry string) string {
	t := strings.TrimRight(entry, " \t")
	for _, op := range []string{"|", "&", ";", "(", "{"} {
		if strings.HasSuffix(t, op) {
			return " "
		}
	}
	word := t[strings.LastIndexAny(t, " \t;")+1:]
	switch word {
	case "do", "then", "else", "elif", "in", "if", "while", "until", "!":
		return " "
	}
	return "; "
}

// historyOption is set -o history and +o history (bash's
// bash_set_history): on, the lines the shell reads are entered in the
// list, and when this session has entered none yet the list is set up
// as bash's load_history does it.
func (sh *shell) historyOption(on bool) {
	sh.opts.history = on
	sh.histRemember = on
	if on && (sh.hist == nil || sh.hist.session == 0) {
		sh.loadHistory()
	}
}

// loadHistory is bash's load_history: HISTSIZE defaults to 500 and
// stifles the list, HISTFILESIZE to HISTSIZE and cuts the file, and
// $HISTFILE's lines are read into the list (not as this session's).
func (sh *shell) loadHistory() {
	sh.histDefaults()
	file, _ := sh.varValue("HISTFILE")
	if file == "" {
		return
	}
	lines, ok := sh.histReadFile(file, false)
	if !ok {
		return
	}
	h := sh.histWritable()
	session := h.session
	total := sh.histLoad(lines, 0)
	h = sh.hist
	h.session = session
	h.inFile = total
}

// histDefaults is the start of bash's load_history: HISTSIZE defaults to
// 500 and stifles the list, HISTFILESIZE to HISTSIZE and cuts the file.
func (sh *shell) histDefaults() {
	if _, ok := sh.varValue("HISTSIZE"); !ok {
		sh.setString("HISTSIZE", "500", false)
	}
	sh.histSizeChanged("HISTSIZE") // (inherited, it was not applied)
	if _, ok := sh.varValue("HISTFILESIZE"); !ok {
		size, _ := sh.varValue("HISTSIZE")
		sh.setString("HISTFILESIZE", size, false)
	}
	sh.histSizeChanged("HISTFILESIZE")
}

// saveHistory is what bash's maybe_save_shell_history does when a shell
// that records its lines (bash -i, set -o history) exits, after its EXIT
// trap: the lines this session added go to the end of $HISTFILE, unless
// more were added than the list holds (HISTSIZE cut some) and histappend
// is off, when the list is written over the file; the file is then cut
// to $HISTFILESIZE. Subshells save nothing.
func (sh *shell) saveHistory() {
	h := sh.hist
	file, ok := sh.varValue("HISTFILE")
	if !sh.histRemember || h == nil || h.session <= 0 || !ok || file == "" {
		return
	}
	if appendOn, _ := sh.shoptValue("histappend"); appendOn || h.session <= len(h.entries) {
		builtinHistory(sh, []string{"history", "-a", "--", file})
	} else {
		builtinHistory(sh, []string{"history", "-w", "--", file})
	}
	sh.histSizeChanged("HISTFILESIZE")
}
