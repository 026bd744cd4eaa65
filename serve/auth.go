package serve

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// caller is who sent a request: its token, if the server has tokens.
type caller struct {
	token *Token
}

type callerKey struct{}

// callerOf returns the request's caller.
func callerOf(r *http.Request) caller {
	c, _ := r.Context().Value(callerKey{}).(caller)
	return c
}

// allowed reports whether the request's caller may reach world: any
// world without tokens, else the token's.
func allowed(r *http.Request, world string) bool {
	c := callerOf(r)
	return c.token == nil || c.token.Allows(world)
}

// allow is allowed as the API's error: 403 naming the world.
func (s *Server) allow(r *http.Request, world string) error {
	if allowed(r, world) {
		return nil
	}
	return &apiError{Status: http.StatusForbidden, Type: typePerm, Code: "world_not_allowed",
		Message: fmt.Sprintf("this token may not reach world %s (it may reach %s)", world, strings.Join(callerOf(r).token.Worlds, ", "))}
}

// authenticate checks the request's bearer token, when the server has
// tokens, and puts its caller in the context.
func (s *Server) authenticate(r *http.Request) (*http.Request, error) {
	if s.opts.Tokens == nil {
		return r, nil
	}
	secret, err := bearerToken(r.Header.Get("Authorization"))
	if err != nil {
		return r, err
	}
	t, ok := s.opts.Tokens.Check(secret)
	if !ok {
		return r, &apiError{Status: http.StatusUnauthorized, Type: typeAuth, Code: "invalid_token",
			Message: "the token is not one this server knows (revoked, or from another token file)"}
	}
	return r.WithContext(context.WithValue(r.Context(), callerKey{}, caller{token: &t})), nil
}

// bearerToken returns the token of an Authorization header's value,
// "Bearer TOKEN" (the scheme in any case, RFC 9110), or says what it
// lacks: no header, a token sent without its scheme (curl -H
// "Authorization: dmt_…"), another scheme.
func bearerToken(auth string) (string, error) {
	missing := func(msg string) error {
		return &apiError{Status: http.StatusUnauthorized, Type: typeAuth, Code: "missing_token", Message: msg}
	}
	auth = strings.TrimSpace(auth)
	if auth == "" {
		return "", missing("no token: send Authorization: Bearer TOKEN (demiurge serve token create makes one)")
	}
	scheme, secret, ok := strings.Cut(auth, " ")
	if !ok || !isSchemeName(scheme) {
		return "", missing(`the Authorization header lacks the scheme: send Authorization: Bearer TOKEN, with "Bearer " before the token`)
	}
	if !strings.EqualFold(scheme, "Bearer") {
		return "", missing(fmt.Sprintf("this server takes bearer tokens, not %s: send Authorization: Bearer TOKEN", scheme))
	}
	if secret = strings.TrimSpace(secret); secret == "" {
		return "", missing("no token after Bearer: send Authorization: Bearer TOKEN (demiurge serve token create makes one)")
	}
	return secret, nil
}

// isSchemeName reports whether s reads as an auth scheme (Basic,
// Bearer, Digest…): a short word of letters, not a token's secret, which
// an error must not echo.
func isSchemeName(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-') {
			return false
		}
	}
	return true
}

// limiter keeps a request rate per caller: a token's id, or, without
// tokens, the client's address.
type limiter struct {
	r     rate.Limit
	burst int
	mu    sync.Mutex
	by    map[string]*rateEntry
	swept time.Time
}

type rateEntry struct {
	l    *rate.Limiter
	used time.Time
}

func newLimiter(perSecond float64, burst int) *limiter {
	if perSecond < 0 {
		return nil
	}
	return &limiter{r: rate.Limit(perSecond), burst: burst, by: map[string]*rateEntry{}}
}

// allow reports whether key may send a request now, and if not, when it
// may.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.swept) > time.Minute {
		for k, e := range l.by {
			if now.Sub(e.used) > 10*time.Minute {
				delete(l.by, k)
			}
		}
		l.swept = now
	}
	e := l.by[key]
	if e == nil {
		e = &rateEntry{l: rate.NewLimiter(l.r, l.burst)}
		l.by[key] = e
	}
	e.used = now
	res := e.l.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// rateKey is whom a request counts against.
func rateKey(r *http.Request) string {
	if t := callerOf(r).token; t != nil {
		return "token:" + t.ID
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

// validOrigin reports whether o is an origin: scheme://host[:port].
func validOrigin(o string) bool {
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && (u.Path == "" || u.Path == "/") && u.RawQuery == "" && u.User == nil
}

// corsAllowed reports whether pages of origin may call the API.
func (s *Server) corsAllowed(origin string) bool {
	return slices.Contains(s.opts.CORSOrigins, "*") || slices.Contains(s.opts.CORSOrigins, strings.TrimSuffix(origin, "/"))
}

// cors answers what browsers ask of a cross-origin request: it refuses
// one from an origin not configured (a page of any site could otherwise
// make a browser post to a server on its loopback), and answers a
// preflight (OPTIONS) of an allowed one. It reports whether the request
// is answered.
func (s *Server) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	if !s.corsAllowed(origin) {
		writeError(w, &apiError{Status: http.StatusForbidden, Type: typePerm, Code: "origin_not_allowed",
			Message: fmt.Sprintf("requests from pages of %s are not allowed (start the server with --cors-origin %s to allow them)", origin, origin)})
		return true
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Demiurge-Turn, Location, Retry-After")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Last-Event-ID, Demiurge-World, Demiurge-Chat")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// hostAllowed reports whether a request to a server without tokens names
// a loopback host: a page that rebinds its own domain name to 127.0.0.1
// (DNS rebinding) cannot reach it.
func (s *Server) hostAllowed(r *http.Request) bool {
	if s.opts.Tokens != nil {
		return true
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return isLoopbackHost(host)
}

// retryAfter is a Retry-After header's value for d.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(int(max(1, (d+time.Second-1)/time.Second)))
}
