package shell

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// Background jobs run to completion where they start (see background):
// what is left of them is bash's job table, the jobs not yet waited for,
// with their status. wait, jobs, kill and the job specs (%1, %%, %+, %-,
// %name, %?text) read it.

// job is a background job that ended.
type job struct {
	num    int
	pid    int64
	status int
	text   string
	end    time.Time // when it would have ended, had it run beside the script
}

// addJob records a finished background job.
func (sh *shell) addJob(pid int64, status int, text string) {
	num := 1
	for _, j := range sh.jobs {
		if j.num >= num {
			num = j.num + 1
		}
	}
	sh.jobs = append(sh.jobs, &job{num: num, pid: pid, status: status, text: text})
}

// jobText is a job's command as jobs shows it.
func (sh *shell) jobText(st *syntax.Stmt) string {
	if st.Cmd == nil {
		return ""
	}
	return strings.TrimSpace(sh.nodeText(st.Cmd))
}

func (sh *shell) jobByPid(pid int64) *job {
	for _, j := range sh.jobs {
		if j.pid == pid {
			return j
		}
	}
	return nil
}

// jobNow is the time on the script's own clock, the one a job's end is
// on: the shell's clock less the time the jobs took that ran where they
// started.
func (sh *shell) jobNow() time.Time { return sh.now().Add(-sh.bgTime) }

// running reports whether a job would still be running, had it run
// beside the script (a sleep in it did not wait).
func (sh *shell) running(j *job) bool { return j.end.After(sh.jobNow()) }

// waitFor waits until a job would have ended: wait takes as long as the
// job would have run on (in a background job, that time is the job's).
func (sh *shell) waitFor(j *job) {
	d := j.end.Sub(sh.jobNow())
	if d <= 0 {
		return
	}
	if sh.bgSlept != nil {
		sh.bgSlept.Add(int64(d))
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-sh.r.ctx.Done():
	}
	sh.check()
}

// signalJob sends signal n to a job: one that would still be running
// ends by it (status 128+n) when the signal's default action ends a
// process; one that has ended is a process that exited.
func (sh *shell) signalJob(j *job, n int) {
	name := signalNames[n]
	if n == 0 || defaultIgnored[name] || !sh.running(j) {
		return
	}
	j.status = 128 + n
	j.end = sh.jobNow()
}

func (sh *shell) removeJob(j *job) {
	for i, x := range sh.jobs {
		if x == j {
			sh.jobs = append(sh.jobs[:i:i], sh.jobs[i+1:]...)
			return
		}
	}
}

// jobSpec finds the job a %spec names.
func (sh *shell) jobSpec(spec string) (*job, bool) {
	s := strings.TrimPrefix(spec, "%")
	n := len(sh.jobs)
	switch {
	case s == "" || s == "%" || s == "+":
		if n > 0 {
			return sh.jobs[n-1], true
		}
	case s == "-":
		if n > 1 {
			return sh.jobs[n-2], true
		}
		if n == 1 {
			return sh.jobs[0], true
		}
	case s[0] >= '0' && s[0] <= '9':
		num, err := strconv.Atoi(s)
		if err != nil {
			return nil, false
		}
		for _, j := range sh.jobs {
			if j.num == num {
				return j, true
			}
		}
	case s[0] == '?':
		for i := n - 1; i >= 0; i-- {
			if strings.Contains(sh.jobs[i].text, s[1:]) {
				return sh.jobs[i], true
			}
		}
	default:
		for i := n - 1; i >= 0; i-- {
			if strings.HasPrefix(sh.jobs[i].text, s) {
				return sh.jobs[i], true
			}
		}
	}
	return nil, false
}

func builtinWait(sh *shell, args []string) int {
	args = args[1:]
	anyJob := false
	pvar := ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		switch args[0] {
		case "-n":
			anyJob = true
		case "-f":
		case "-p":
			if len(args) < 2 {
				return sh.usage("wait", "-p: option requires an argument")
			}
			pvar = args[1]
			args = args[1:]
		case "--":
			args = args[1:]
			goto done
		default:
			sh.errorf("wait: %s: invalid option", args[0])
			sh.usageLine("wait: usage: wait [-fn] [-p var] [id ...]")
			return 2
		}
		args = args[1:]
	}
done:
	if len(args) == 0 {
		if anyJob {
			// the job that would have ended first
			if len(sh.jobs) == 0 {
				return 127
			}
			j := sh.jobs[0]
			for _, x := range sh.jobs[1:] {
				if x.end.Before(j.end) {
					j = x
				}
			}
			sh.waitFor(j)
			sh.removeJob(j)
			if pvar != "" {
				sh.setString(pvar, strconv.FormatInt(j.pid, 10), false)
			}
			return j.status
		}
		for _, j := range sh.jobs {
			sh.waitFor(j)
		}
		sh.jobs = nil
		return 0
	}
	status := 0
	for _, a := range args {
		var j *job
		if strings.HasPrefix(a, "%") {
			var ok bool
			if j, ok = sh.jobSpec(a); !ok {
				sh.errorf("wait: %s: no such job", a)
				status = 127
				continue
			}
		} else {
			pid, err := strconv.ParseInt(a, 10, 64)
			if err != nil {
				sh.errorf("wait: `%s': not a pid or valid job spec", a)
				status = 1
				continue
			}
			if j = sh.jobByPid(pid); j == nil {
				sh.errorf("wait: pid %s is not a child of this shell", a)
				status = 127
				continue
			}
		}
		sh.waitFor(j)
		sh.removeJob(j)
		if pvar != "" {
			sh.setString(pvar, strconv.FormatInt(j.pid, 10), false)
		}
		status = j.status
		if anyJob {
			break
		}
	}
	return status
}

// builtinJobs lists the jobs not yet waited for (all have ended: bash
// then forgets them, as it does once it reported them).
func builtinJobs(sh *shell, args []string) int {
	args = args[1:]
	pids, long := false, false
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		for _, c := range args[0][1:] {
			switch c {
			case 'p':
				pids = true
			case 'l':
				long = true
			case 'n', 'r', 's':
			default:
				sh.errorf("jobs: -%c: invalid option", c)
				sh.usageLine("jobs: usage: jobs [-lnprs] [jobspec ...] or jobs -x command [args]")
				return 2
			}
		}
		args = args[1:]
	}
	list := sh.jobs
	if len(args) > 0 {
		list = nil
		for _, a := range args {
			j, ok := sh.jobSpec(a)
			if !ok {
				sh.errorf("jobs: %s: no such job", a)
				return 1
			}
			list = append(list, j)
		}
	}
	var b strings.Builder
	n := len(sh.jobs)
	for _, j := range list {
		if pids {
			fmt.Fprintf(&b, "%d\n", j.pid)
			continue
		}
		mark := ' '
		switch {
		case n > 0 && j == sh.jobs[n-1]:
			mark = '+'
		case n > 1 && j == sh.jobs[n-2]:
			mark = '-'
		}
		state, text := "Done", j.text
		switch {
		case sh.running(j):
			state, text = "Running", text+" &"
		case j.status != 0:
			state = "Exit " + strconv.Itoa(j.status)
		}
		if long {
			fmt.Fprintf(&b, "[%d]%c %d %-22s%s\n", j.num, mark, j.pid, state, text)
		} else {
			fmt.Fprintf(&b, "[%d]%c  %-24s%s\n", j.num, mark, state, text)
		}
	}
	sh.out("jobs", b.String())
	return 0
}

// builtinDisown removes jobs from the table: disown [-h] [-ar] [jobspec
// ... | pid ...]; without operands the current job, -a all, -r only the
// jobs still running; -h keeps them (there is no SIGHUP to spare them).
func builtinDisown(sh *shell, args []string) int {
	args = args[1:]
	all, running, hold := false, false, false
	args, st := sh.shortOptions("disown", args, func(c rune) bool {
		switch c {
		case 'a':
			all = true
		case 'r':
			running = true
		case 'h':
			hold = true
		default:
			return false
		}
		return true
	})
	if st != 0 {
		return st
	}
	var list []*job
	status := 0
	switch {
	case len(args) > 0:
		for _, a := range args {
			var j *job
			if strings.HasPrefix(a, "%") {
				j, _ = sh.jobSpec(a)
			} else if pid, err := strconv.ParseInt(a, 10, 64); err == nil {
				j = sh.jobByPid(pid)
			}
			if j == nil {
				sh.errorf("disown: %s: no such job", a)
				status = 1
				continue
			}
			list = append(list, j)
		}
	case all:
		list = append(list, sh.jobs...)
	default:
		j, ok := sh.jobSpec("%+")
		if !ok {
			sh.errorf("disown: current: no such job")
			return 1
		}
		list = []*job{j}
	}
	if hold {
		return status
	}
	for _, j := range list {
		if !running || sh.running(j) {
			sh.removeJob(j)
		}
	}
	return status
}
