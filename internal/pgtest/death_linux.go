package pgtest

import "syscall"

// dieWithParent makes the server get SIGQUIT (PostgreSQL's immediate
// shutdown) when the test binary that started it dies.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGQUIT }
