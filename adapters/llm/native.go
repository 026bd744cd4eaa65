package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"slices"
	"sort"
	"strconv"
	"sync"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/chunked"
)

// The native providers (Anthropic's Messages API, the Gemini API) build
// their request bodies from parts made once: each transcript item is
// encoded once in the provider's form and kept, the messages they make
// are spliced from those bytes and kept, and each request is its head
// (the settings, the system prompt, the tools), the messages, and a tail.
// A chat's next request reuses every message of the one before but the
// last few, so a round costs the new items, whatever the chat's length:
// the body goes to the server from those parts (never joined into one
// buffer), and the evidence is stored from the same parts as
// content-defined chunks that build on the request before
// (chunked.Writer.PutAfter, as splice.go does for OpenAI's APIs): the
// bytes both share are not cut, hashed or stored again.

// encoded is one transcript item in a native provider's form.
type encoded struct {
	// role is the role of the message the item goes in ("user",
	// "assistant", "model", "system"); "" sends nothing.
	role string
	// body is the item's blocks (Anthropic) or parts (Gemini), JSON
	// objects separated by commas, without brackets.
	body []byte
	// markAt is the offset in body of the '}' that ends the item's last
	// block that may carry a cache marker, -1 if none (Anthropic).
	markAt int
	// thinks reports that the item is a thinking block the provider
	// takes back; calls, that it is a tool call (Anthropic).
	thinks, calls bool
}

// part is a piece of a request body.
type part struct {
	b      []byte
	secret bool // b holds the API key (the head's; see msgGroup.secret)
}

func newPart(b []byte) part { return part{b: b} }

// msgGroup is one message of a request: a run of items of one role.
type msgGroup struct {
	from, to int // the items it holds, [from, to)
	mark     int // the item whose last block carries a cache marker, -1 if none
	part     part
	secret   bool // part holds the API key the session was checked against
}

// nativeSession is what a chat's last request was made of, kept so that
// its next request reuses it. Its fields are guarded by mu.
type nativeSession struct {
	mu       sync.Mutex
	provider string
	refs     []cas.Ref // the message blobs of the last request
	items    []item
	enc      []encoded
	names    map[string]string // call id → function name (Gemini)
	groups   []msgGroup
	roles    []string // each group's role
	marked   []int    // the groups that carry a cache marker
	head     part
	// bufs are the last request's parts, head, groups and tail: the next
	// request's body rewrites them from the first that changes. offs[i]
	// is where bufs[i] begins in the body (offs[len(bufs)] its length),
	// rewritten with them: a body's length, and where a part of it is,
	// cost no walk of its parts.
	bufs    [][]byte
	offs    []int
	secrets int             // how many groups hold the API key (msgGroup.secret)
	sending int             // how many bodies made of bufs are being sent (each call's release ends one)
	stored  *chunked.Chunks // the evidence of the last request stored
	built   bool            // the last request built was stored (its parts are stored's)
	gen     uint64          // counts the requests built
	keyHash cas.Ref         // the API key the parts were checked against
	size    int             // bytes held, roughly
	used    uint64          // when it was last used (sessions' clock); guarded by sessions.mu

	// seenRefs and seenSize are refs and size as the last call left
	// them, for sessions.find to choose and bound by without taking mu
	// (a session is in use while it is chosen). Guarded by sessions.mu.
	seenRefs []cas.Ref
	seenSize int
}

// reset empties the session.
func (ns *nativeSession) reset() {
	ns.refs, ns.items, ns.enc, ns.groups, ns.roles, ns.marked, ns.names = nil, nil, nil, nil, nil, nil, nil
	ns.head, ns.size, ns.built = part{}, 0, false
	ns.bufs, ns.offs, ns.secrets = nil, nil, 0 // a body being sent keeps its own
}

// release says that the body last built is no longer being sent: the
// next build may rewrite its parts in place.
func (ns *nativeSession) release() {
	ns.mu.Lock()
	ns.sending--
	ns.mu.Unlock()
}

// sessions keeps the native sessions of recent chats, bounded in bytes.
type sessions struct {
	mu    sync.Mutex
	list  []*nativeSession
	clock uint64
}

// sessionBytes bounds the bytes the sessions of a Generator hold.
const sessionBytes = 64 << 20

// find returns the session whose transcript refs begins with, the longest
// such, or a new one, locked; release unlocks it. A new session replaces
// the least recently used when the sessions hold too much.
func (s *sessions) find(provider string, refs []cas.Ref) *nativeSession {
	s.mu.Lock()
	s.clock++
	var best *nativeSession
	total := 0
	for _, ns := range s.list {
		total += ns.seenSize
		if ns.provider != provider || len(ns.seenRefs) == 0 || len(refs) == 0 || ns.seenRefs[0] != refs[0] {
			continue
		}
		if len(ns.seenRefs) <= len(refs) && sameRefs(ns.seenRefs, refs) == len(ns.seenRefs) && (best == nil || len(ns.seenRefs) > len(best.seenRefs)) {
			best = ns
		}
	}
	if best == nil {
		for total > sessionBytes && len(s.list) > 0 {
			i := 0
			for j, ns := range s.list {
				if ns.used < s.list[i].used {
					i = j
				}
			}
			total -= s.list[i].seenSize
			s.list = slices.Delete(s.list, i, i+1)
		}
		best = &nativeSession{provider: provider}
		s.list = append(s.list, best)
	}
	best.used = s.clock
	s.mu.Unlock()
	best.mu.Lock()
	if n := len(best.refs); n > len(refs) || sameRefs(best.refs, refs) != n {
		// Another call moved the session on between its choice and its
		// lock (a chat and its fork, or two calls of one chat at once):
		// its transcript is no longer refs' beginning, so it starts over.
		best.reset()
	}
	return best
}

// seen publishes ns's refs and size for find; the caller holds ns.mu.
func (s *sessions) seen(ns *nativeSession) {
	s.mu.Lock()
	ns.seenRefs, ns.seenSize = ns.refs, ns.size
	s.mu.Unlock()
}

// nativeDialect is what a native provider supplies to build its requests.
type nativeDialect interface {
	// encode encodes the transcript item it, the items before it already
	// encoded in ns.
	encode(ns *nativeSession, it item) (encoded, error)
	// groupOpen is the start of a message of role ("{"role":…,"content":["),
	// after a comma unless first.
	groupOpen(role string, first bool) []byte
	// marks returns the groups whose last cacheable block carries a cache
	// marker, given the groups' roles; nil for none.
	marks(roles []string) []int
}

// messageOpen is the start of a message of role in both native dialects,
// its blocks or parts in the list member ("content", "parts"), after a
// comma unless first.
func messageOpen(role, member string, first bool) []byte {
	s := `{"role":` + strconv.Quote(role) + `,"` + member + `":[`
	if !first {
		s = "," + s
	}
	return []byte(s)
}

// headOpen is the start of a native request: head, the request's settings
// (a struct encoded as a JSON object), then its messages' list member
// ("messages", "contents") opened.
func headOpen(head any, member string) ([]byte, error) {
	b, err := marshalNoEscape(head)
	if err != nil {
		return nil, invalidf("encode the request: %v", err)
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, invalidf("encode the request: %T is not a JSON object", head)
	}
	if len(b) == 2 { // {}
		return []byte(`{"` + member + `":[`), nil
	}
	return append(b[:len(b)-1], `,"`+member+`":[`...), nil
}

// groupClose ends a message in both native dialects.
var groupClose = []byte("]}")

// splicedBody is a request body made of parts, never changed once made.
type splicedBody struct {
	bufs   [][]byte
	offs   []int // offs[i] is where bufs[i] begins; offs[len(bufs)] = size
	size   int
	keep   int             // the leading parts that are base's
	base   *chunked.Chunks // the evidence of the chat's request before
	gen    uint64          // the session's count of requests when it was built
	secret bool            // a part holds the API key
}

// reader returns a reader of the whole body.
func (b *splicedBody) reader() io.Reader { return &partsReader{bufs: b.bufs} }

// Len is the body's length.
func (b *splicedBody) Len() int { return b.size }

// From returns the body's bytes from off on, joined. The part off lies
// in is found by halving: a chat's body has a part per message.
func (b *splicedBody) From(off int) []byte {
	out := make([]byte, 0, max(b.size-off, 0))
	i := max(sort.SearchInts(b.offs[:len(b.bufs)], off+1)-1, 0) // the last part beginning at or before off
	for ; i < len(b.bufs); i++ {
		p, at := b.bufs[i], b.offs[i]
		if at+len(p) > off {
			out = append(out, p[max(off-at, 0):]...)
		}
	}
	return out
}

// partsReader reads parts in order, without copying the list.
type partsReader struct {
	bufs [][]byte
	i    int // the part being read
	off  int // how much of it was read
}

func (r *partsReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && r.i < len(r.bufs) {
		c := copy(p[n:], r.bufs[r.i][r.off:])
		n += c
		r.off += c
		if r.off == len(r.bufs[r.i]) {
			r.i, r.off = r.i+1, 0
		}
	}
	if n == 0 && r.i == len(r.bufs) {
		return 0, io.EOF
	}
	return n, nil
}

func (r *partsReader) Close() error { return nil }

// WriteTo writes the parts left to w, each as it is (io.Copy calls it:
// the body is not copied through a buffer).
func (r *partsReader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for ; r.i < len(r.bufs); r.i, r.off = r.i+1, 0 {
		k, err := w.Write(r.bufs[r.i][r.off:])
		n += int64(k)
		if err != nil {
			r.off += k
			return n, err
		}
	}
	return n, nil
}

// bytes returns the body joined (for the evidence of a failed attempt,
// and tests).
func (b *splicedBody) bytes() []byte {
	return bytes.Join(b.bufs, nil)
}

// build makes the request body of a native provider: head, the messages
// of the transcript refs, tail. The session of the chat (found by its
// refs) gives the items and messages already made; the rest are made and
// kept. It also returns the transcript's items.
//
// apiKey is looked for in each part as it is made (and in every part
// when it is not the key the session's parts were checked against), so
// that the evidence can be stored without it (storeNative).
func (g *Generator) buildNative(ctx context.Context, blobs Blobs, d nativeDialect, provider string, refs []cas.Ref, apiKey string,
	head func(ns *nativeSession) ([]byte, error)) (*splicedBody, *nativeSession, error) {
	if len(refs) == 0 {
		return nil, nil, invalidf("message_refs is empty: give at least one message blob")
	}
	ns := g.sessions.find(provider, refs)
	ok := false
	defer func() {
		if !ok {
			ns.reset() // a session left half made starts over
		}
		g.sessions.seen(ns)
		ns.mu.Unlock()
	}()
	var newItems []item
	if len(refs) > len(ns.refs) {
		var err error
		if newItems, err = loadTranscript(ctx, blobs, refs[len(ns.refs):], &g.messages); err != nil {
			return nil, nil, err
		}
	}
	// The session keeps the transcript's refs themselves (they begin
	// with its own): a chat's next refs extend the same array in place
	// (transcriptRefs), and find sees at once that they begin with these.
	ns.refs = refs
	for _, it := range shrinkItems(newItems, g.cfg.MaxItemBytes) {
		e, err := d.encode(ns, it)
		if err != nil {
			return nil, nil, err
		}
		ns.items = append(ns.items, it)
		ns.enc = append(ns.enc, e)
		ns.size += len(it.raw) + len(e.body)
	}

	// The messages: runs of items of one role. Those of the last request
	// stand but its last (which the new items may extend) and those whose
	// cache marker moves.
	from := 0 // the first group made again
	if n := len(ns.groups); n > 0 {
		from = n - 1
	}
	// The groups before from stand, in place; the old ones from on are
	// kept aside, to be reused if they come out the same.
	old := slices.Clone(ns.groups[from:])
	groups, roles := ns.groups[:from], ns.roles[:from]
	secrets := ns.secrets // the groups before from that hold the key
	for _, grp := range old {
		if grp.secret {
			secrets--
		}
	}
	first := 0
	if from > 0 {
		first = groups[from-1].to
	}
	for i := first; i < len(ns.enc); i++ {
		e := ns.enc[i]
		if e.role == "" {
			if n := len(groups); n > 0 {
				groups[n-1].to = i + 1
			}
			continue
		}
		if n := len(groups); n > from && roles[n-1] == e.role {
			groups[n-1].to = i + 1
			continue
		}
		groups = append(groups, msgGroup{from: i, to: i + 1, mark: -1})
		roles = append(roles, e.role)
	}
	// prev is what group k was in the last request, if it was.
	prev := func(k int) (msgGroup, bool) {
		if k < from {
			return groups[k], true
		}
		if k-from < len(old) {
			return old[k-from], true
		}
		return msgGroup{}, false
	}
	// The groups looked at again: from on, and each that carries a cache
	// marker or carried one.
	marked := d.marks(roles)
	var again []int
	for _, k := range append(slices.Clone(ns.marked), marked...) {
		if k < from && !slices.Contains(again, k) {
			again = append(again, k)
		}
	}
	slices.Sort(again)
	for k := from; k < len(groups); k++ {
		again = append(again, k)
	}
	holds := func(b []byte) bool { return len(apiKey) >= redactMin && bytes.Contains(b, []byte(apiKey)) }
	if kh := cas.Sum([]byte(apiKey)); kh != ns.keyHash {
		ns.keyHash = kh
		for k := range groups[:from] {
			groups[k].secret = holds(groups[k].part.b)
		}
		for k := range old {
			old[k].secret = holds(old[k].part.b)
		}
		ns.head.secret = holds(ns.head.b)
		secrets = 0
		for k := range groups[:from] {
			if groups[k].secret {
				secrets++
			}
		}
	}
	changed := len(groups) // the first group whose part changed
	for _, k := range again {
		grp := &groups[k]
		if k < from && grp.secret {
			secrets-- // counted again below, as it is now
		}
		was, existed := prev(k)
		grp.mark = -1
		if slices.Contains(marked, k) {
			for i := grp.to - 1; i >= grp.from; i-- {
				if ns.enc[i].role != "" && ns.enc[i].markAt >= 0 {
					grp.mark = i
					break
				}
			}
		}
		if existed {
			if was.from == grp.from && was.to == grp.to && was.mark == grp.mark {
				grp.part, grp.secret = was.part, was.secret
				if grp.secret {
					secrets++
				}
				continue
			}
			ns.size -= len(was.part.b)
		}
		changed = min(changed, k)
		var b bytes.Buffer
		b.Write(d.groupOpen(roles[k], k == 0))
		n := 0
		for i := grp.from; i < grp.to; i++ {
			e := ns.enc[i]
			if e.role == "" {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			if i == grp.mark {
				b.Write(e.body[:e.markAt])
				b.WriteString(cacheMarker)
				b.Write(e.body[e.markAt:])
				continue
			}
			b.Write(e.body)
		}
		b.Write(groupClose)
		grp.part = newPart(b.Bytes())
		grp.secret = holds(grp.part.b)
		if grp.secret {
			secrets++
		}
		ns.size += len(grp.part.b)
	}
	ns.groups, ns.roles, ns.marked, ns.secrets = groups, roles, marked, secrets
	h, err := head(ns)
	if err != nil {
		return nil, nil, err
	}
	// The parts: those of the last request up to the first that changed,
	// then the rest. Those kept are the same as the last request stored,
	// if it was stored (its evidence is what the next builds on).
	keep := min(1+changed, len(ns.bufs))
	if !bytes.Equal(h, ns.head.b) {
		ns.head = newPart(h)
		ns.head.secret = holds(h)
		keep = 0
	}
	if !ns.built {
		keep = 0
	}
	if ns.sending > 0 {
		// A body made of these parts is still being sent (the last, or
		// an earlier one of a chat that shares the session): this one
		// gets parts of its own.
		ns.bufs, ns.offs = slices.Clone(ns.bufs), slices.Clone(ns.offs)
	}
	set := func(i int, p part) {
		if i < len(ns.bufs) {
			ns.bufs[i] = p.b
			return
		}
		ns.bufs = append(ns.bufs, p.b)
	}
	n := min(1+changed, len(ns.bufs)) // the parts that stand
	ns.bufs = ns.bufs[:n]
	set(0, ns.head)
	for k := n - 1; k < len(groups); k++ {
		if k >= 0 {
			set(1+k, groups[k].part)
		}
	}
	set(1+len(groups), bodyTail)
	// The offsets of the parts that stand stand too (offs[:n+1]), unless
	// the head's length changed.
	valid := 1 // offs[:valid] are right
	if len(ns.offs) > 1 && ns.offs[1] == len(ns.bufs[0]) {
		valid = min(n, len(ns.offs)-1) + 1
	}
	if len(ns.offs) == 0 {
		ns.offs = append(ns.offs, 0)
	}
	ns.offs = ns.offs[:valid]
	for i := valid - 1; i < len(ns.bufs); i++ {
		ns.offs = append(ns.offs, ns.offs[i]+len(ns.bufs[i]))
	}
	ns.gen++
	body := &splicedBody{bufs: ns.bufs, offs: ns.offs, size: ns.offs[len(ns.bufs)], keep: keep, base: ns.stored, gen: ns.gen,
		secret: ns.head.secret || secrets > 0}
	ns.sending++
	ns.built = false
	ok = true
	return body, ns, nil
}

// bodyTail ends the messages (the last member of a native request) and
// the request.
var bodyTail = newPart([]byte("]}"))

// cacheMarker is spliced into the block that ends a cached prefix
// (Anthropic's prompt caching).
const cacheMarker = `,"cache_control":{"type":"ephemeral"}`

// storeNative stores a native request's evidence, the API key redacted,
// building on the chat's last request (the parts the body kept are its
// bytes), and returns its ref.
func (g *Generator) storeNative(ctx context.Context, blobs Blobs, ns *nativeSession, body *splicedBody, apiKey string) (cas.Ref, error) {
	if body.secret && len(apiKey) >= redactMin {
		// The bytes differ from the body sent: no chain.
		return g.evidence.Put(ctx, blobs, redactBytes(body.bytes(), apiKey))
	}
	ref, next, err := g.evidence.PutAfter(ctx, blobs, body.base, body, body.offs[body.keep])
	if err != nil {
		return cas.Ref{}, err
	}
	if ns != nil {
		ns.mu.Lock()
		if body.gen == ns.gen {
			// The session's parts are this request's: the next builds on it.
			ns.stored, ns.built = next, true
		}
		ns.mu.Unlock()
	}
	return ref, nil
}

// nativeStreamError reads an error a native API reports inside an answer
// (Anthropic's "error" event, {"type":"error","error":{"type":…}}; a
// Gemini chunk {"error":{"code","status","message"}}), classed as the same
// error would be as an HTTP status: overloaded or failed servers
// (overloaded_error, api_error, UNAVAILABLE, INTERNAL) and rate limits
// (rate_limit_error, RESOURCE_EXHAUSTED) are tried again.
func nativeStreamError(data []byte) error {
	typ, msg, code, _ := errorFields(data)
	var e struct {
		Error struct {
			Status string `json:"status"`
		} `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	if msg == "" {
		msg = "the stream reported an error"
	}
	name := typ
	if e.Error.Status != "" {
		name = e.Error.Status
	}
	switch name {
	case "overloaded_error", "api_error", "UNAVAILABLE", "INTERNAL":
		return &parseError{kind: KindServer, code: name, msg: msg, retryable: true}
	case "rate_limit_error", "RESOURCE_EXHAUSTED":
		return &parseError{kind: KindRateLimited, code: name, msg: msg, retryable: true}
	}
	if name == "" {
		name = code
	}
	return &parseError{kind: KindFailed, code: name, msg: msg}
}
