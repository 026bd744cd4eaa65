package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Errors of a store.
var (
	// ErrNoStore is returned (wrapped) by Open with ReadOnly when the
	// database holds no demiurge store: nothing has written it yet.
	ErrNoStore = errors.New("pgstore: no demiurge store in the database")
	// ErrSchemaVersion is returned (wrapped) by Open when the store's
	// tables are of a version this demiurge does not know (a newer one),
	// or of an older one that a read-only Open may not upgrade.
	ErrSchemaVersion = errors.New("pgstore: store schema version")
	// ErrLeaseLost is returned (wrapped in a *LeaseError) by a fenced
	// commit when the world's lease is no longer the one the writer holds:
	// another worker took the world over. Nothing is written.
	ErrLeaseLost = errors.New("pgstore: lease lost")
)

// IsURL reports whether s names a PostgreSQL store: a postgres:// or
// postgresql:// URL.
func IsURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// Redact returns the store URL s with its password replaced by "xxxxx",
// for messages and logs; if s does not parse as a URL, a placeholder.
func Redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || !IsURL(s) || u.Host == "" && u.Path == "" {
		// A keyword/value string ("host=h password=pw") is no URL: its
		// password would show as it is.
		return "postgres://…"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Options configure Open. A nil *Options and the zero value mean the
// defaults.
type Options struct {
	// ReadOnly opens the store for reading: its connections run read-only
	// transactions (the server refuses writes), Open creates or upgrades
	// nothing, a database without a store is an error wrapping ErrNoStore,
	// and writes return journal.ErrReadOnly or cas.ErrReadOnly.
	ReadOnly bool
	// MaxConns bounds the connections of the store's pool; 0 means
	// DefaultMaxConns.
	MaxConns int32
	// ConnectTimeout bounds each attempt to connect; 0 means
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
}

// Defaults of Options.
const (
	DefaultMaxConns       = 16
	DefaultConnectTimeout = 10 * time.Second
)

// Validate reports the first invalid option, or nil.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	if o.MaxConns < 0 {
		return fmt.Errorf("pgstore: Options.MaxConns is %d, want >= 0", o.MaxConns)
	}
	if o.ConnectTimeout < 0 {
		return fmt.Errorf("pgstore: Options.ConnectTimeout is %v, want >= 0", o.ConnectTimeout)
	}
	return nil
}

// Store is a demiurge store in a PostgreSQL database: a journal and a CAS
// sharing one connection pool, so that a world's step commits its records
// and its blobs in one transaction (Commit), plus the worlds' leases and
// their inbox for running worlds on many workers. It is safe for
// concurrent use, by any number of processes.
type Store struct {
	pool     *pgxpool.Pool
	name     string // the URL, redacted
	secret   string // the password, scrubbed from errors
	readOnly bool
	channel  string // the inbox's NOTIFY channel (per schema)
	version  int    // the tables' version (below SchemaVersion only when read-only)

	journal *Journal
	cas     *CAS

	mu      sync.Mutex
	closed  bool
	users   sync.WaitGroup // calls in progress (see enter)
	closeMu sync.Once
}

// Open connects to the store at url (postgres://user:password@host:port/db
// ?options; a search_path option picks the schema) and, unless
// opts.ReadOnly, creates its tables or upgrades them to SchemaVersion.
// Passing nil options uses the defaults. The URL's password never appears
// in errors. The caller must Close the store.
func Open(ctx context.Context, rawURL string, opts *Options) (*Store, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	name := Redact(rawURL)
	if _, err := url.Parse(rawURL); err != nil && IsURL(rawURL) {
		// Its error quotes the part that does not parse, which may be
		// the password's (one with an @, /, : or % not percent-encoded),
		// and the password cannot be found to hide it: say what to check
		// without quoting any of it.
		return nil, fmt.Errorf("pgstore: store URL %s does not parse as a URL: check its host and port, and percent-encode the special characters of its user name and password (@ as %%40, : as %%3A, / as %%2F, %% as %%25, # as %%23, ? as %%3F)", name)
	}
	secret := passwordOf(rawURL)
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		var pce *pgconn.ParseConfigError
		if errors.As(err, &pce) && pce.Unwrap() != nil {
			err = pce.Unwrap()
		}
		return nil, scrub(fmt.Errorf("pgstore: store URL %s does not parse: %w", name, err), secret, name)
	}
	if secret == "" {
		secret = cfg.ConnConfig.Password
	}
	cfg.MaxConns = o.MaxConns
	cfg.ConnConfig.ConnectTimeout = o.ConnectTimeout
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	if _, ok := cfg.ConnConfig.RuntimeParams["application_name"]; !ok {
		cfg.ConnConfig.RuntimeParams["application_name"] = "demiurge"
	}
	if o.ReadOnly {
		cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, scrub(fmt.Errorf("pgstore: open %s: %w", name, err), secret, name)
	}
	s := &Store{pool: pool, name: name, secret: secret, readOnly: o.ReadOnly}
	s.journal = &Journal{s: s}
	s.cas = &CAS{s: s}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, s.wrap(err)
	}
	return s, nil
}

// passwordOf returns the password of a URL, or "" if it has none or does
// not parse.
func passwordOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	if p, ok := u.User.Password(); ok {
		return p
	}
	return u.Query().Get("password")
}

// scrubAnywhere is the length from which a password is also replaced
// where it stands alone in a message; a shorter one only where a
// connection string would show it (replacing every "o" of a message
// garbles it, and which letters were replaced gives the password away).
const scrubAnywhere = 8

// scrub returns err with the secret hidden where its message shows it:
// as a URL's password (":SECRET@"), as a keyword/value setting
// ("password=SECRET", quoted or not), percent-encoded or not, and, for a
// secret of scrubAnywhere bytes or more that is not also a word of the
// store's redacted name (its user, database or host: postgres as all of
// them would blank them all, which shows the password), anywhere.
// errors.Is and As still see through it.
func scrub(err error, secret, name string) error {
	if err == nil || secret == "" {
		return err
	}
	msg := err.Error()
	out := msg
	forms := []string{secret}
	for _, e := range []string{url.QueryEscape(secret), url.PathEscape(secret), url.UserPassword("u", secret).String()[2:]} {
		if e != "" && !slices.Contains(forms, e) {
			forms = append(forms, e)
		}
	}
	anywhere := len(secret) >= scrubAnywhere && !strings.Contains(name, secret)
	for _, f := range forms {
		out = strings.ReplaceAll(out, ":"+f+"@", ":xxxxx@")
		for _, kw := range []string{"password=", "password='", `password="`} {
			out = replaceAfter(out, kw+f, kw, "xxxxx")
		}
		if anywhere {
			out = strings.ReplaceAll(out, f, "xxxxx")
		}
	}
	if out == msg {
		return err
	}
	return &scrubbed{msg: out, err: err}
}

// replaceAfter replaces each occurrence of old in s that ends a value
// (old is followed by the end, a quote, a space, & or ;) by prefix+repl.
func replaceAfter(s, old, prefix, repl string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(old)
		if end == len(s) || strings.ContainsRune(`'" &;`, rune(s[end])) {
			b.WriteString(s[:i] + prefix + repl)
		} else {
			b.WriteString(s[:end])
		}
		s = s[end:]
	}
}

type scrubbed struct {
	msg string
	err error
}

func (e *scrubbed) Error() string { return e.msg }
func (e *scrubbed) Unwrap() error { return e.err }

// wrap scrubs the store's password from err.
func (s *Store) wrap(err error) error { return scrub(err, s.secret, s.name) }

// migrate creates or upgrades the store's tables, or checks them when
// read-only.
func (s *Store) migrate(ctx context.Context) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: connect to %s: %w%s", s.name, withoutRefusedTLS(err), connectHint(err))
	}
	defer conn.Release()
	if err := conn.QueryRow(ctx, `SELECT 'demiurge:' || coalesce(current_schema(), '')`).Scan(&s.channel); err != nil {
		return fmt.Errorf("pgstore: %s: %w", s.name, err)
	}
	version, err := schemaVersion(ctx, conn.Conn())
	if err != nil {
		return err
	}
	switch {
	case version > SchemaVersion:
		return fmt.Errorf("%w: the store at %s is at version %d, this demiurge knows versions up to %d: use a newer demiurge", ErrSchemaVersion, s.name, version, SchemaVersion)
	case version == SchemaVersion:
		s.version = version
		return nil
	case s.readOnly && version == 0:
		return fmt.Errorf("%w at %s (nothing has written it yet)", ErrNoStore, s.name)
	case s.readOnly && version >= MinReadVersion:
		s.version = version // read as it is: what later versions added reads as empty
		return nil
	case s.readOnly:
		return fmt.Errorf("%w: the store at %s is at version %d and needs upgrading to %d, which a read-only open does not do: open it once read-write (any command that writes, or demiurge worker)", ErrSchemaVersion, s.name, version, SchemaVersion)
	}
	// One migrator at a time, per schema: the others wait, then find the
	// tables made. (A session lock, taken before the transaction starts,
	// so that the transaction sees the tables another one committed.)
	const key = `hashtext('demiurge migrate ' || coalesce(current_schema(), ''))`
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(`+key+`)`); err != nil {
		return fmt.Errorf("pgstore: %s: lock for migration: %w", s.name, err)
	}
	defer func() { _, _ = conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock(`+key+`)`) }()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgstore: %s: %w", s.name, err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if version, err = schemaVersion(ctx, tx.Conn()); err != nil {
		return err
	}
	for v := version; v < SchemaVersion; v++ {
		if _, err := tx.Exec(ctx, migrations[v]); err != nil {
			return fmt.Errorf("pgstore: %s: migrate from version %d to %d: %w", s.name, v, v+1, err)
		}
	}
	if version < SchemaVersion {
		if _, err := tx.Exec(ctx, `INSERT INTO demiurge_meta (key, value) VALUES ('schema_version', $1)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, strconv.Itoa(SchemaVersion)); err != nil {
			return fmt.Errorf("pgstore: %s: record the schema version: %w", s.name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgstore: %s: migrate: %w", s.name, err)
	}
	s.version = SchemaVersion
	return nil
}

// schemaVersion returns the version of the store's tables, 0 if there are
// none.
func schemaVersion(ctx context.Context, conn *pgx.Conn) (int, error) {
	var exists bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('demiurge_meta') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, fmt.Errorf("pgstore: read the schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	var v string
	err := conn.QueryRow(ctx, `SELECT value FROM demiurge_meta WHERE key = 'schema_version'`).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: table demiurge_meta has no schema_version (not a demiurge store?)", ErrSchemaVersion)
	}
	if err != nil {
		return 0, fmt.Errorf("pgstore: read the schema version: %w", err)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("%w: schema_version is %q (not a demiurge store?)", ErrSchemaVersion, v)
	}
	return n, nil
}

// enter registers a call in progress; it reports false once Close was
// called. A true enter must be matched by s.users.Done().
func (s *Store) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.users.Add(1)
	return true
}

// Close waits for the calls in progress (pending commits finish), then
// closes the pool. Later calls of the store, its journal and its CAS
// return their packages' ErrClosed. A second Close returns nil.
func (s *Store) Close() error {
	s.closeMu.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.users.Wait()
		s.pool.Close()
	})
	return nil
}

// Name returns the store's URL with its password redacted.
func (s *Store) Name() string { return s.name }

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.readOnly }

// Journal returns the store's journal. Closing it stops only the journal;
// Close the store to close the connections.
func (s *Store) Journal() *Journal { return s.journal }

// CAS returns the store's blob store. Closing it stops only the CAS;
// Close the store to close the connections.
func (s *Store) CAS() *CAS { return s.cas }

// Pool returns the store's connection pool, for benchmarks and tests that
// compare with raw queries.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// isConnError reports whether err, the error of a batch already sent,
// leaves its outcome unknown: the server did not answer with an error of
// its own (which rolls the transaction back) — the connection broke, or
// the server shut down while running it.
func isConnError(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P: the server is shutting
		// down, crashed, or cannot connect now.
		return strings.HasPrefix(pgErr.Code, "08") || strings.HasPrefix(pgErr.Code, "57P")
	}
	return err != nil
}

// refusedTLS is what pgx says of an attempt whose server does not take
// TLS: under sslmode=prefer (the default) it then tries again without.
const refusedTLS = "tls error: server refused TLS connection"

// withoutRefusedTLS leaves out of a failed connection's error the attempts
// a server refused TLS to, when a later attempt (the fallback without TLS)
// failed for a reason of its own: a wrong password or a missing database
// is the failure, and "server refused TLS" above it is noise that reads as
// the cause. The error it returns unwraps to err.
func withoutRefusedTLS(err error) error {
	var ce *pgconn.ConnectError
	if !errors.As(err, &ce) || ce.Config == nil {
		return err
	}
	joined, ok := ce.Unwrap().(interface{ Unwrap() []error })
	if !ok {
		return err
	}
	var kept []string
	refused, later := false, false // an attempt was refused TLS; one after it failed otherwise
	for _, e := range joined.Unwrap() {
		if strings.HasSuffix(e.Error(), refusedTLS) {
			refused = true
			continue
		}
		kept = append(kept, e.Error())
		later = later || refused
	}
	if !later {
		return err
	}
	// As pgconn.ConnectError.Error writes it, with the attempts left.
	msg := fmt.Sprintf("failed to connect to `user=%s database=%s`:", ce.Config.User, ce.Config.Database)
	if details := strings.Join(kept, "\n"); strings.Contains(details, "\n") {
		msg += "\n\t" + strings.ReplaceAll(details, "\n", "\n\t")
	} else {
		msg += " " + details
	}
	return &connectError{msg: msg, err: err}
}

// connectError is a failed connection's error with another message.
type connectError struct {
	msg string
	err error
}

func (e *connectError) Error() string { return e.msg }
func (e *connectError) Unwrap() error { return e.err }

// connectHint says what to do about a failed connection, after its error:
// what the server answered (a password, a database that is not there) or
// that none answered.
func connectHint(err error) string {
	var pgErr *pgconn.PgError
	var netErr net.Error
	switch {
	case errors.As(err, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000"):
		return "\n(check the user name and password in the store URL)"
	case errors.As(err, &pgErr) && pgErr.Code == "3D000":
		return "\n(create the database, e.g. createdb --owner USER NAME, or fix its name at the end of the store URL)"
	case errors.As(err, &pgErr):
		return ""
	case errors.As(err, &netErr), strings.Contains(err.Error(), "dial error"), strings.Contains(err.Error(), "hostname resolving error"):
		return "\n(is the PostgreSQL server running, and are the host and port of the store URL right?)"
	}
	return ""
}
