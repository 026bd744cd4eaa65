package ui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/demiurge-dev/demiurge/cas"

	"github.com/demiurge-dev/demiurge/reducer"
)

// DefaultAddr is the address the view listens on by default: the IPv4
// loopback, on a port the system picks.
const DefaultAddr = "127.0.0.1:0"

// DefaultPoll is how often a live page looks at a world's head when the
// Source cannot wait for records (see Waiter).
const DefaultPoll = 250 * time.Millisecond

// ErrBadAddr is returned (wrapped) by Listen for an address that is not
// HOST:PORT on a loopback interface.
var ErrBadAddr = errors.New("ui: not a loopback HOST:PORT")

// Listen listens on addr, which must name a loopback interface: an IP
// address such as 127.0.0.1 or [::1], or localhost, with a port (0 for one
// the system picks). Any other address is an error wrapping
// ErrBadAddr: the view is for the person at this machine.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v (such as %s)", ErrBadAddr, addr, err, DefaultAddr)
	}
	if ip := net.ParseIP(host); !strings.EqualFold(host, "localhost") && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%w: %q; the view listens on 127.0.0.1, [::1] or localhost only (such as %s)", ErrBadAddr, addr, DefaultAddr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ui: listen on %s: %w", addr, err)
	}
	if ta, ok := ln.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("%w: %s listens on %s", ErrBadAddr, addr, ln.Addr())
	}
	return ln, nil
}

// Options configure New.
type Options struct {
	// Source is the store the view reads. Required.
	Source Source
	// Name names the store in pages (its directory, or its URL without
	// the password).
	Name string
	// Reducers are the reducers a replay from the page runs: those of the
	// binary. Nil leaves replay out of the view.
	Reducers *reducer.Registry
	// Token is the secret the link carries; "" makes a random one (32
	// bytes from crypto/rand, as hex).
	Token string
	// Poll is how often a live page looks at a world's head when Source
	// is no Waiter; 0 means DefaultPoll.
	Poll time.Duration
	// Log receives a line for each request refused and each failure to
	// render; nil discards them.
	Log *slog.Logger
	// Evals, if set, is where the view reads the store's eval runs
	// (demiurge eval keeps them in its evals directory: eval.Runs): the
	// view lists them and shows each, its cases linked to their worlds.
	Evals EvalRuns
}

// Server is the web view of one store, served on one listener.
type Server struct {
	src      Source
	name     string
	reducers *reducer.Registry
	token    string
	host     string // the Host header requests must carry: the address printed
	cookie   string
	poll     time.Duration
	log      *slog.Logger
	ln       net.Listener
	pages    map[string]*template.Template
	mux      *http.ServeMux
	replays  chan struct{} // one replay at a time
	evalRuns EvalRuns

	keptMu sync.Mutex
	kept   map[cas.Ref][]byte // the blobs the last divergence derived
}

// New returns a server of the view over ln, which Listen returned. Its
// link (URL) names ln's address as the host requests must use.
func New(ln net.Listener, opts Options) (*Server, error) {
	if opts.Source == nil {
		return nil, errors.New("ui: Options.Source is nil: give the store to read")
	}
	if opts.Poll < 0 {
		return nil, fmt.Errorf("ui: Options.Poll is %v, want >= 0", opts.Poll)
	}
	token := opts.Token
	if token == "" {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("ui: make a token: %w", err)
		}
		token = hex.EncodeToString(b[:])
	}
	ta, ok := ln.Addr().(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("ui: listener on %s is not TCP", ln.Addr())
	}
	s := &Server{src: opts.Source, name: opts.Name, reducers: opts.Reducers, token: token,
		host: ta.String(), cookie: fmt.Sprintf("demiurge_ui_%d", ta.Port), poll: opts.Poll, log: opts.Log,
		ln: ln, replays: make(chan struct{}, 1), evalRuns: opts.Evals}
	if s.poll == 0 {
		s.poll = DefaultPoll
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// URL returns the link to the view, carrying its token: the one to print.
func (s *Server) URL() string {
	return "http://" + s.host + "/?token=" + url.QueryEscape(s.token)
}

// Host returns the address requests must name in their Host header.
func (s *Server) Host() string { return s.host }

// Serve serves the view on its listener until ctx ends, then stops:
// live pages' streams end, and requests under way get a second to finish.
// It closes the listener.
func (s *Server) Serve(ctx context.Context) error {
	base, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("ui: serve on %s: %w", s.host, err)
	case <-ctx.Done():
	}
	cancel()
	stop, done := context.WithTimeout(context.Background(), time.Second)
	defer done()
	if err := srv.Shutdown(stop); err != nil {
		_ = srv.Close()
	}
	return nil
}

// ServeHTTP serves one request of the view, once the request has passed
// the checks in the package doc ("Who gets in").
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	if !strings.EqualFold(r.Host, s.host) {
		s.refuse(w, r, http.StatusForbidden, fmt.Sprintf("refused: this view answers to http://%s/ only, not to Host %q. Open the link demiurge ui printed.", s.host, r.Host))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		s.refuse(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("refused: %s; the view only reads (GET, HEAD)", r.Method))
		return
	}
	if q := r.URL.Query(); q.Has("token") {
		if !s.tokenOK(q.Get("token")) {
			s.refuse(w, r, http.StatusForbidden, "refused: the token in the link is not this view's. Open the link demiurge ui printed last.")
			return
		}
		// The cookie carries the token from now on; the address bar and
		// the history lose it.
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		q.Del("token")
		u := *r.URL
		u.RawQuery = q.Encode()
		http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
		return
	}
	if c, err := r.Cookie(s.cookie); err != nil || !s.tokenOK(c.Value) {
		s.refuse(w, r, http.StatusForbidden, "refused: no token. Open the link demiurge ui printed (it ends in ?token=…).")
		return
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.log.Warn("ui: request refused", "method", r.Method, "host", r.Host, "path", r.URL.Path, "status", code)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}
