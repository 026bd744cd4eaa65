package awk

import "regexp"

// Expressions.
type (
	expr interface{ isExpr() }

	numLit struct{ v float64 }
	strLit struct{ v string }
	// regexLit is /re/: as a value it matches $0.
	regexLit struct {
		src string
		re  *regexp.Regexp
	}
	// varExpr is a variable: global (scope 0), local (1) or special (2).
	varExpr struct {
		scope int
		idx   int
		name  string
	}
	fieldExpr struct{ index expr }
	indexExpr struct {
		arr  *varExpr
		keys []expr
	}
	assignExpr struct {
		lhs expr // varExpr, fieldExpr or indexExpr
		op  tokKind
		rhs expr
	}
	condExpr   struct{ cond, yes, no expr }
	binaryExpr struct {
		op   tokKind // arithmetic, comparison, tAnd, tOr; tString for concatenation
		l, r expr
	}
	unaryExpr struct {
		op tokKind // tMinus, tPlus, tNot
		x  expr
	}
	incDecExpr struct {
		lhs   expr
		pre   bool
		delta float64
	}
	inExpr struct {
		keys []expr
		arr  *varExpr
	}
	matchExpr struct {
		x, re expr
		neg   bool
	}
	callExpr struct {
		fn   int // index in program.funcs
		name string
		args []expr
	}
	builtinExpr struct {
		name string
		args []expr
	}
	// getlineExpr is getline [lhs] [< src], or src | getline [lhs].
	getlineExpr struct {
		from int // getSimple, getFile, getCmd
		lhs  expr
		src  expr
	}
	groupExpr struct{ x expr }
	// listExpr is (a, b): the keys of "in" or the arguments of print.
	listExpr struct{ items []expr }
)

const (
	getSimple = iota
	getFile
	getCmd
)

func (*numLit) isExpr()      {}
func (*strLit) isExpr()      {}
func (*regexLit) isExpr()    {}
func (*varExpr) isExpr()     {}
func (*fieldExpr) isExpr()   {}
func (*indexExpr) isExpr()   {}
func (*assignExpr) isExpr()  {}
func (*condExpr) isExpr()    {}
func (*binaryExpr) isExpr()  {}
func (*unaryExpr) isExpr()   {}
func (*incDecExpr) isExpr()  {}
func (*inExpr) isExpr()      {}
func (*matchExpr) isExpr()   {}
func (*callExpr) isExpr()    {}
func (*builtinExpr) isExpr() {}
func (*getlineExpr) isExpr() {}
func (*groupExpr) isExpr()   {}
func (*listExpr) isExpr()    {}

// Statements.
type (
	stmt interface{ isStmt() }

	printStmt struct {
		args   []expr
		printf bool
		redir  tokKind // 0, tGreater, tAppend, tPipe
		dest   expr
	}
	exprStmt struct{ x expr }
	ifStmt   struct {
		cond     expr
		then, el stmt
	}
	whileStmt struct {
		cond expr
		body stmt
	}
	doStmt struct {
		body stmt
		cond expr
	}
	forStmt struct {
		init, post stmt
		cond       expr
		body       stmt
	}
	forInStmt struct {
		v    expr // varExpr (or field/index: any lvalue)
		arr  *varExpr
		body stmt
	}
	blockStmt    struct{ stmts []stmt }
	nextStmt     struct{}
	nextfileStmt struct{}
	exitStmt     struct{ x expr }
	returnStmt   struct{ x expr }
	breakStmt    struct{}
	continueStmt struct{}
	deleteStmt   struct {
		arr  *varExpr
		keys []expr // nil: the whole array
	}
)

func (*printStmt) isStmt()    {}
func (*exprStmt) isStmt()     {}
func (*ifStmt) isStmt()       {}
func (*whileStmt) isStmt()    {}
func (*doStmt) isStmt()       {}
func (*forStmt) isStmt()      {}
func (*forInStmt) isStmt()    {}
func (*blockStmt) isStmt()    {}
func (*nextStmt) isStmt()     {}
func (*nextfileStmt) isStmt() {}
func (*exitStmt) isStmt()     {}
func (*returnStmt) isStmt()   {}
func (*breakStmt) isStmt()    {}
func (*continueStmt) isStmt() {}
func (*deleteStmt) isStmt()   {}

// item is a pattern-action rule.
type item struct {
	pattern  expr // nil: every record
	pattern2 expr // the end of a range pattern, or nil
	body     *blockStmt
}

// function is a user-defined function.
type function struct {
	name    string
	params  []string
	nlocals int
	body    *blockStmt
	defined bool
	line    int
}
