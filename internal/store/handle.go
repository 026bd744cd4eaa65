package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/pgstore"
)

// Handle is an open store of either kind, as the commands use it: a
// directory holding one bbolt file (Open), or a PostgreSQL database named
// by a postgres:// URL (pgstore.Open).
type Handle struct {
	name string
	bolt *Store
	pg   *pgstore.Store
	live *Live // a bbolt store read through the process that writes it
}

// IsURL reports whether where names a PostgreSQL store rather than a
// directory.
func IsURL(where string) bool { return pgstore.IsURL(where) }

// urlLike matches the start of a URL: a scheme (two characters or more,
// so that C:/ stays a path), a colon and a slash.
var urlLike = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]+:/`) })

// CheckWhere refuses a where that is meant as a store URL but is not a
// postgres:// or postgresql:// one (postgress://…, postgres//…, mysql://…):
// taken as a directory, it would become a new bbolt store whose path
// holds the URL's password. The error shows the URL without it.
func CheckWhere(where string) error {
	if IsURL(where) {
		return nil
	}
	if urlLike().MatchString(where) || strings.HasPrefix(strings.ToLower(where), "postgres") && strings.Contains(where, "@") {
		return fmt.Errorf("open store %s: not a postgres:// or postgresql:// URL, and a URL is no directory: write it as postgres://USER:PASSWORD@HOST:PORT/DATABASE", Redact(where))
	}
	return nil
}

// Redact returns where as messages and logs show it: a URL without its
// password (pgstore.Redact), a directory as it is. A where that is
// neither quite (a URL with a typo in its scheme) loses what stands
// between the colon and the last @ of USER:PASSWORD@HOST.
func Redact(where string) string {
	if IsURL(where) {
		return pgstore.Redact(where)
	}
	start := 0
	if i := strings.Index(where, "//"); i >= 0 {
		start = i + 2
	}
	at := strings.LastIndex(where, "@")
	if at < start {
		return where
	}
	colon := strings.Index(where[start:at], ":")
	if colon < 0 {
		return where
	}
	return where[:start+colon+1] + "xxxxx" + where[at:]
}

// OpenAt opens the store where names: a postgres:// or postgresql:// URL
// opens a PostgreSQL store (creating its tables unless read-only), and
// anything else is a directory, opened as Open does. opts applies to both
// (LockTimeout and NoSync only to a directory). Errors never show the
// URL's password.
//
// A directory opened read-only while another process writes it is read
// through that process (see "Reading while another process writes"):
// Bolt then returns nil, Served the writer's process id, and the journal
// and CAS read what the writer has made durable. If the writer stops
// while the handle is open, its reads go on from the file.
func OpenAt(ctx context.Context, where string, opts *Options) (*Handle, error) {
	if err := CheckWhere(where); err != nil {
		return nil, err
	}
	if !IsURL(where) && opts != nil && opts.ReadOnly {
		if err := opts.Validate(); err != nil {
			return nil, err
		}
		if where == "" {
			return nil, errors.New("open store: empty directory name")
		}
		if err := checkFile(where); err != nil {
			return nil, err
		}
		timeout := opts.LockTimeout
		if timeout == 0 {
			timeout = DefaultLockTimeout
		}
		r, s, err := discover(ctx, where, timeout)
		if err != nil {
			return nil, err
		}
		if s != nil {
			return &Handle{name: where, bolt: s}, nil
		}
		l := &Live{dir: where, name: where, o: LiveOptions{LockTimeout: timeout, Poll: DefaultPoll}, rem: r, source: "writer"}
		return &Handle{name: where, live: l}, nil
	}
	if !IsURL(where) {
		s, err := Open(where, opts)
		if err != nil {
			return nil, err
		}
		return &Handle{name: where, bolt: s}, nil
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	readOnly := opts != nil && opts.ReadOnly
	s, err := pgstore.Open(ctx, where, &pgstore.Options{ReadOnly: readOnly})
	if err != nil {
		return nil, &openError{where: Redact(where), err: err}
	}
	return &Handle{name: s.Name(), pg: s}, nil
}

// openError is a PostgreSQL store that did not open, said as a store on
// disk says it: "open store WHERE: what", without pgstore's own prefix
// and name of the store. It is ErrNotExist too when the database holds no
// store.
type openError struct {
	where string // redacted
	err   error
}

func (e *openError) Error() string {
	msg := strings.TrimPrefix(e.err.Error(), "pgstore: ")
	for _, p := range [][2]string{{"open " + e.where + ": ", ""}, {e.where + ": ", ""}, {"connect to " + e.where + ": ", "connect: "}} {
		if rest, ok := strings.CutPrefix(msg, p[0]); ok {
			msg = p[1] + rest
			break
		}
	}
	if errors.Is(e.err, pgstore.ErrNoStore) {
		msg = strings.Replace(msg, "no demiurge store in the database", ErrNotExist.Error()+": no demiurge store in the database", 1)
	}
	return "open store " + e.where + ": " + msg
}

func (e *openError) Unwrap() []error {
	if errors.Is(e.err, pgstore.ErrNoStore) {
		return []error{e.err, ErrNotExist}
	}
	return []error{e.err}
}

// Dir returns the store's directory, or its URL with the password
// redacted: the name to show in messages.
func (h *Handle) Dir() string { return h.name }

// Bolt returns the bbolt store, or nil for a PostgreSQL one and for one
// read through its writer.
func (h *Handle) Bolt() *Store { return h.bolt }

// Postgres returns the PostgreSQL store, or nil for a bbolt one.
func (h *Handle) Postgres() *pgstore.Store { return h.pg }

// Served returns the id of the process through which the store is read,
// or 0 if the handle reads the file itself (or PostgreSQL).
func (h *Handle) Served() int {
	if h.live != nil {
		return h.live.Writer()
	}
	return 0
}

// CAS returns the store's blobs.
func (h *Handle) CAS() cas.Store {
	switch {
	case h.pg != nil:
		return h.pg.CAS()
	case h.live != nil:
		return liveCAS{h.live}
	}
	return h.bolt.CAS()
}

// Journal returns the store's journal.
func (h *Handle) Journal() journal.Store {
	switch {
	case h.pg != nil:
		return h.pg.Journal()
	case h.live != nil:
		return liveJournal{h.live}
	}
	return h.bolt.Journal()
}

// CheckFile checks the pages of a bbolt store's file (see
// cas.Bolt.CheckFile); a PostgreSQL store has no file of ours to check,
// and returns nil. Neither does a store read through its writer: the
// check needs the file to itself (it returns ErrServed).
func (h *Handle) CheckFile(ctx context.Context) error {
	switch {
	case h.pg != nil:
		return nil
	case h.live != nil:
		return fmt.Errorf("%w: another process writes store %s; its pages can be checked once that process has stopped", ErrServed, h.name)
	}
	return h.bolt.CAS().CheckFile(ctx)
}

// ErrServed is returned (wrapped) by Handle.CheckFile for a store read
// through the process that writes it.
var ErrServed = errors.New("store: read through its writer")

// Close closes the store.
func (h *Handle) Close() error {
	switch {
	case h.pg != nil:
		return h.pg.Close()
	case h.live != nil:
		return h.live.Close()
	}
	return h.bolt.Close()
}
