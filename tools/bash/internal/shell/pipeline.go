package shell

import (
	"bytes"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"

	"github.com/demiurge-dev/demiurge/tools/bash/internal/budget"
)

// pipeStage is one stage of a pipeline, and whether its stderr goes into
// the pipe too (|&).
type pipeStage struct {
	st      *syntax.Stmt
	withErr bool
}

// flattenPipe lists the stages of a pipeline.
func flattenPipe(c *syntax.BinaryCmd, out []pipeStage) []pipeStage {
	left := c.X
	if b, ok := left.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) &&
		len(left.Redirs) == 0 && !left.Negated && !left.Background {
		out = flattenPipe(b, out)
	} else {
		out = append(out, pipeStage{st: left})
	}
	out[len(out)-1].withErr = c.Op == syntax.PipeAll
	right := c.Y
	if b, ok := right.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) &&
		len(right.Redirs) == 0 && !right.Negated && !right.Background {
		return flattenPipe(b, out)
	}
	return append(out, pipeStage{st: right})
}

// pipeline runs a | b | c: every stage in a subshell of its own (the last
// one in this shell with shopt -s lastpipe), the stages concurrently,
// connected by pipes. $? is the last stage's status (with pipefail, the
// last that failed), PIPESTATUS all of them.
func (sh *shell) pipeline(c *syntax.BinaryCmd) {
	stages := flattenPipe(c, nil)
	n := len(stages)
	pipes := int64(n - 1)
	if max := sh.r.lim.MaxPipelineStages; max > 0 && sh.r.stages.Add(pipes) > max {
		sh.r.stages.Add(-pipes)
		sh.r.limit("maximum concurrent pipeline stages exceeded (%d)", max)
	}
	defer sh.r.stages.Add(-pipes)
	statuses := make([]int, n)
	var wg sync.WaitGroup
	var in *ofile // the read end for the next stage
	for i := 0; i < n-1; i++ {
		if _, simple := stages[i].st.Cmd.(*syntax.CallExpr); simple {
			// bash runs the DEBUG trap in the shell, before it forks a
			// simple command
			sh.setLine(stages[i].st.Pos())
			if !sh.debugTrap("") {
				return
			}
		}
		r, w := sh.newPipeFiles()
		sub := sh.fork()
		if in != nil {
			sub.fds.set(0, in)
			sub.stdinRedir++ // (a job it starts reads the pipe)
		}
		sub.fds.set(1, w)
		if stages[i].withErr {
			sub.fds.set(2, w.ref())
		}
		in = r
		st := stages[i].st
		idx := i
		wg.Add(1)
		sh.r.wg.Add(1)
		goWork(func() {
			defer sh.r.wg.Done()
			defer wg.Done()
			statuses[idx] = sub.runStage(st)
		})
	}
	last := stages[n-1].st
	if _, simple := last.Cmd.(*syntax.CallExpr); simple && !sh.shopt.lastpipe {
		sh.setLine(last.Pos())
		if !sh.debugTrap("") {
			wg.Wait()
			return
		}
	}
	if sh.shopt.lastpipe && !sh.opts.monitor {
		restoreIn := sh.fds.get(0)
		if restoreIn != nil {
			restoreIn.ref()
		}
		sh.fds.set(0, in)
		sh.stdinRedir++
		func() {
			defer func() {
				sh.stdinRedir--
				sh.fds.set(0, restoreIn)
			}()
			sh.stmt(last)
		}()
		statuses[n-1] = sh.status
	} else {
		sub := sh.fork()
		sub.fds.set(0, in)
		sub.stdinRedir++
		// bash forks the last stage: a simple command or a subshell there
		// runs no ERR trap for its own status (see below)
		sub.asyncCmd = last.Cmd
		statuses[n-1] = sub.runStageSync(last)
	}
	wg.Wait()
	sh.check()
	sh.pipestatus = statuses
	status := statuses[n-1]
	if sh.opts.pipefail {
		for _, s := range statuses {
			if s != 0 {
				status = s
			}
		}
	}
	sh.status = status
	if _, sub := last.Cmd.(*syntax.Subshell); sub && !sh.shopt.lastpipe && status != 0 && sh.flow == flowNone {
		// bash checks a last stage that is a subshell with the
		// pipeline's status, and then the pipeline: the ERR trap runs
		// twice ((false) | (false))
		sh.failed()
	}
	if sh.flow == flowNone {
		sh.afterOwn(c)
	}
}

// runStage runs a pipeline stage in its own goroutine (sh is its
// subshell) and returns its status; it recovers everything, so that no
// panic leaves the goroutine.
func (sh *shell) runStage(st *syntax.Stmt) (status int) {
	defer func() {
		if p := recover(); p != nil {
			switch p.(type) {
			case stopPanic:
				status = 1
			default:
				sh.r.stop(fmt.Errorf("internal error: %v\n%s", p, debug.Stack()))
				status = 1
			}
		}
		sh.release()
	}()
	return sh.runSubshell(func() { sh.stmt(st) })
}

// runStageSync runs the last stage of a pipeline in the caller's
// goroutine; a stop unwinds the caller too.
func (sh *shell) runStageSync(st *syntax.Stmt) int {
	defer sh.release()
	return sh.runSubshell(func() { sh.stmt(st) })
}

// substBuf collects a command substitution's output, within the run's
// bound and memory budget.
type substBuf struct {
	mu    sync.Mutex
	b     bytes.Buffer
	max   int64
	meter *budget.Meter
	sh    *shell
}

func (s *substBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max > 0 && int64(s.b.Len()+len(p)) > s.max {
		s.sh.r.stop(&LimitError{Msg: fmt.Sprintf("command substitution output exceeded (%d bytes)", s.max)})
		return 0, errStopped
	}
	if err := s.meter.Set(int64(s.b.Len() + len(p))); err != nil {
		s.sh.r.stop(err)
		return 0, errStopped
	}
	return s.b.Write(p)
}

// cmdSubst runs $(...) and returns its output without trailing newlines.
func (sh *shell) cmdSubst(cs *syntax.CmdSubst) string {
	if file, ok := catShortcut(cs); ok {
		return sh.readShortcut(file)
	}
	if v, ok := sh.arithCarried(cs); ok {
		return v
	}
	sub := sh.fork()
	sub.isSubst = true
	if !sh.shopt.inheritErrexit {
		sub.opts.errexit = false
	}
	buf := &substBuf{max: sh.r.lim.MaxSubstBytes, meter: sh.r.budget.NewMeter(), sh: sh}
	defer buf.meter.Close()
	sub.fds.set(1, newOFile(nil, buf, nil, "pipe"))
	status := sub.runSubshell(func() { sub.stmts(cs.Stmts) })
	sub.release()
	sh.check()
	sh.status = status
	sh.substStatus = status
	out := buf.b.Bytes()
	if bytes.IndexByte(out, 0) >= 0 {
		sh.errorf("warning: command substitution: ignored null byte in input")
		out = bytes.ReplaceAll(out, []byte{0}, nil)
	}
	return string(bytes.TrimRight(out, "\n"))
}

// catShortcut recognizes $(< file).
func catShortcut(cs *syntax.CmdSubst) (*syntax.Redirect, bool) {
	if len(cs.Stmts) != 1 {
		return nil, false
	}
	st := cs.Stmts[0]
	if st.Cmd != nil || len(st.Redirs) != 1 || st.Redirs[0].Op != syntax.RdrIn || st.Negated || st.Background {
		return nil, false
	}
	return st.Redirs[0], true
}

// readShortcut reads the file of $(< file).
func (sh *shell) readShortcut(rd *syntax.Redirect) string {
	word, ok := sh.redirWord(rd.Word)
	if !ok {
		sh.status, sh.substStatus = 1, 1
		return ""
	}
	f, ok := sh.openRedir(word, 0, false)
	if !ok {
		sh.status, sh.substStatus = 1, 1
		return ""
	}
	defer f.unref()
	var b bytes.Buffer
	meter := sh.r.budget.NewMeter()
	defer meter.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := f.r.Read(buf)
		if n > 0 {
			if max := sh.r.lim.MaxSubstBytes; max > 0 && int64(b.Len()+n) > max {
				sh.r.limit("command substitution output exceeded (%d bytes)", max)
			}
			if err := meter.Set(int64(b.Len() + n)); err != nil {
				sh.r.stop(err)
				panic(stopPanic{})
			}
			b.Write(buf[:n])
		}
		if err != nil {
			break
		}
	}
	sh.status, sh.substStatus = 0, 0
	return strings.TrimRight(b.String(), "\n")
}

// psub is a process substitution of the current command.
type psub struct {
	fd   int
	f    *ofile // the shell's end
	done chan struct{}
	// detach removes /dev/fd/N from the file system
	detach func()
}

// procSubst starts <(...) or >(...) and returns the path of its end,
// /dev/fd/N.
func (sh *shell) procSubst(ps *syntax.ProcSubst) string {
	r, w := sh.newPipeFiles()
	sub := sh.fork()
	var mine *ofile
	if ps.Op == syntax.CmdOut {
		sub.fds.set(0, r)
		mine = w
	} else {
		sub.fds.set(1, w)
		mine = r
	}
	fd := sh.r.allocPsubFD()
	p := &psub{fd: fd, f: mine, done: make(chan struct{})}
	sh.fds.set(fd, mine.ref())
	if sh.r.cfg.FS != nil {
		var rr, ww = mine.r, mine.w
		p.detach = sh.r.cfg.FS.AttachFD(fd, rr, ww)
	}
	sh.psubList = append(sh.psubList, p)
	sh.r.wg.Add(1)
	goWork(func() {
		defer sh.r.wg.Done()
		defer close(p.done)
		if rd, ok := catShortcut(&syntax.CmdSubst{Stmts: ps.Stmts}); ok {
			// <(< file) is the file, as $(< file) is
			sub.runStage(&syntax.Stmt{Cmd: &syntax.CallExpr{Args: []*syntax.Word{{Parts: []syntax.WordPart{&syntax.Lit{Value: catCarrier}}}}}, Redirs: []*syntax.Redirect{rd}})
			return
		}
		sub.runStage(&syntax.Stmt{Cmd: &syntax.Block{Stmts: ps.Stmts}})
	})
	return "/dev/fd/" + strconv.Itoa(fd)
}

// cleanupPsubs ends the process substitutions made since mark: their
// ends are closed and they are waited for, so that >(...)'s output is
// written before the next command.
func (sh *shell) cleanupPsubs(mark int) {
	if len(sh.psubList) <= mark {
		return
	}
	list := sh.psubList[mark:]
	sh.psubList = sh.psubList[:mark]
	for _, p := range list {
		if sh.fds.get(p.fd) == p.f {
			sh.fds.close(p.fd)
		}
		if p.detach != nil {
			p.detach()
		}
		p.f.unref()
	}
	for _, p := range list {
		select {
		case <-p.done:
		case <-sh.r.ctx.Done():
		}
		sh.r.freePsubFD(p.fd)
	}
}

// allocPsubFD picks the descriptor number of a process substitution: 63
// and down, as bash, unique in the run (the file system shows them all).
func (r *Runner) allocPsubFD() int {
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	if r.psubFDs == nil {
		r.psubFDs = map[int]bool{}
	}
	for fd := 63; fd > 10; fd-- {
		if !r.psubFDs[fd] {
			r.psubFDs[fd] = true
			return fd
		}
	}
	for fd := 64; ; fd++ {
		if !r.psubFDs[fd] {
			r.psubFDs[fd] = true
			return fd
		}
	}
}

func (r *Runner) freePsubFD(fd int) {
	r.cacheMu.Lock()
	delete(r.psubFDs, fd)
	r.cacheMu.Unlock()
}
