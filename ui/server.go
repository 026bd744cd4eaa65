package ui

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
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
	// Log receives a line for each request refused, each replay run and
	// each decision sent, and each failure to render; nil discards them.
	Log *slog.Logger
	// Evals, if set, is where the view reads the store's eval runs
	// (demiurge eval keeps them in the store: eval.Runs on disk,
	// eval.PostgresRuns on PostgreSQL): the
	// view lists them and shows each, its cases linked to their worlds.
	Evals EvalRuns
	// Decide, if set, answers a call that waits for approval, as
	// demiurge approve and deny do: the timeline then shows Approve and
	// Deny buttons under such a call. Nil leaves them out (the page says
	// which command answers).
	Decide func(ctx context.Context, d Decision) (DecisionResult, error)
	// Manifest, if set, returns the manifest (the AIR directory) a world
	// was last run with, as the command that answers a call at a terminal
	// names it; "" when not known (the page then says MANIFEST).
	Manifest func(world string) string
}

// Decision is what the page's Approve and Deny buttons send about a call
// that waits for approval.
type Decision struct {
	World, Chat, Call string
	Approve           bool
	Reason            string
}

// DecisionResult says who journaled a decision: the tool of the call, the
// seq of the record, and the process that wrote it (0 if not known).
type DecisionResult struct {
	Tool   string
	Seq    uint64
	Writer int
}

// Server is the web view of one store, served on one listener.
type Server struct {
	src      Source
	name     string
	reducers *reducer.Registry
	token    string
	form     string // the token forms carry (formToken): a page of this view holds it, another site's cannot read it
	decide   func(ctx context.Context, d Decision) (DecisionResult, error)
	manifest func(world string) string
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
	s := &Server{src: opts.Source, name: opts.Name, reducers: opts.Reducers, token: token, form: formToken(token),
		decide: opts.Decide, manifest: opts.Manifest, host: ta.String(), cookie: fmt.Sprintf("demiurge_ui_%d", ta.Port), poll: opts.Poll, log: opts.Log,
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
	// same-origin, not no-referrer: with no-referrer a browser sends its
	// forms with "Origin: null", and the view checks the Origin of forms.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	if !strings.EqualFold(r.Host, s.host) {
		s.refuse(w, r, http.StatusForbidden, fmt.Sprintf("refused: this view answers to http://%s/ only, not to Host %q. Open the link demiurge ui printed.", s.host, r.Host))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		h.Set("Allow", "GET, HEAD, POST")
		s.refuse(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("refused: %s; the view reads with GET and HEAD, and acts (replay, approve, deny) with POST", r.Method))
		return
	}
	if site := r.Header.Get("Sec-Fetch-Site"); (site == "cross-site" || site == "same-site") &&
		(r.Method == http.MethodPost || r.Header.Get("Sec-Fetch-Mode") != "navigate") {
		// A page of another site, or of another port of this host (the
		// cookie's SameSite does not tell ports apart), asking for a
		// part of the view or sending a form: only a link followed to
		// it opens a page of the view.
		s.refuse(w, r, http.StatusForbidden, "refused: a request from another site's page (Sec-Fetch-Site: "+site+"). Open the view from the link demiurge ui printed.")
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
	if r.Method == http.MethodPost && !s.formOK(w, r) {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// formToken is the token a page's forms carry: a hash of the view's
// token, so that it is known only to those who hold the token (the pages
// the view serves), and the view's own token never shows in a page.
func formToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("demiurge ui form"))
	return hex.EncodeToString(m.Sum(nil))
}

// maxForm bounds a form's body.
const maxForm = 64 << 10

// formOK checks a POST, which acts: it must come from a page of the view
// (its Origin, when the browser names one, is the view's) and carry the
// form token that the view's pages hold and no other site can read. It
// refuses the request otherwise.
func (s *Server) formOK(w http.ResponseWriter, r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" && o != "null" && !strings.EqualFold(o, "http://"+s.host) {
		s.refuse(w, r, http.StatusForbidden, fmt.Sprintf("refused: a form sent from %s; this view takes forms from its own pages only", o))
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxForm)
	if err := r.ParseForm(); err != nil {
		s.refuse(w, r, http.StatusBadRequest, "refused: the form does not read: "+err.Error())
		return false
	}
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get(formField)), []byte(s.form)) != 1 {
		s.refuse(w, r, http.StatusForbidden, "refused: the form lacks this view's form token. Send it from a page of the view (reload the page if the view was started again).")
		return false
	}
	return true
}

// formField names the form token in a page's forms.
const formField = "form_token"

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.log.Warn("ui: request refused", "method", r.Method, "host", r.Host, "path", r.URL.Path, "status", code)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintln(w, msg)
}
