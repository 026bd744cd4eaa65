package llm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
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
// buffer), and the evidence is stored from the same parts, each a chunk
// (chunked.Writer.PutParts), sharing the chunks of the request before.

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

// part is a piece of a request body and its hash.
type part struct {
	b   []byte
	sum cas.Ref
}

func newPart(b []byte) part { return part{b: b, sum: cas.Sum(b)} }

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
	head     part
	keyHash  cas.Ref        // the API key the parts were checked against
	stored   chunked.Stored // the evidence of the last request
	size     int            // bytes held, roughly
	used     uint64         // when it was last used (sessions' clock)
}

// reset empties the session.
func (ns *nativeSession) reset() {
	ns.refs, ns.items, ns.enc, ns.groups, ns.names = nil, nil, nil, nil, nil
	ns.head, ns.size = part{}, 0
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
		total += ns.size
		if ns.provider != provider || len(ns.refs) == 0 || len(refs) == 0 || ns.refs[0] != refs[0] {
			continue
		}
		if len(ns.refs) <= len(refs) && slices.Equal(ns.refs, refs[:len(ns.refs)]) && (best == nil || len(ns.refs) > len(best.refs)) {
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
			total -= s.list[i].size
			s.list = slices.Delete(s.list, i, i+1)
		}
		best = &nativeSession{provider: provider}
		s.list = append(s.list, best)
	}
	best.used = s.clock
	s.mu.Unlock()
	best.mu.Lock()
	return best
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

// groupClose ends a message in both native dialects.
var groupClose = []byte("]}")

// splicedBody is a request body made of parts.
type splicedBody struct {
	parts  []part
	size   int64
	secret bool // a part holds the API key
}

// reader returns a reader of the whole body.
func (b *splicedBody) reader() io.ReadCloser {
	bufs := make(net.Buffers, len(b.parts))
	for i, p := range b.parts {
		bufs[i] = p.b
	}
	return io.NopCloser(&bufs)
}

// bytes returns the body joined (for the evidence of a failed attempt,
// and tests).
func (b *splicedBody) bytes() []byte {
	out := make([]byte, 0, b.size)
	for _, p := range b.parts {
		out = append(out, p.b...)
	}
	return out
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
		ns.mu.Unlock()
	}()
	if len(ns.refs) > len(refs) || !slices.Equal(ns.refs, refs[:len(ns.refs)]) {
		ns.reset()
	}
	newItems, err := loadTranscript(ctx, blobs, refs[len(ns.refs):], &g.messages)
	if err != nil {
		return nil, nil, err
	}
	ns.refs = append(ns.refs, refs[len(ns.refs):]...)
	for _, it := range shrinkItems(newItems, g.cfg.MaxItemBytes) {
		e, err := d.encode(ns, it)
		if err != nil {
			return nil, nil, err
		}
		ns.items = append(ns.items, it)
		ns.enc = append(ns.enc, e)
		ns.size += len(it.raw) + len(e.body)
	}

	// The messages: runs of items of one role.
	var groups []msgGroup
	var roles []string
	for i, e := range ns.enc {
		if e.role == "" {
			if n := len(groups); n > 0 {
				groups[n-1].to = i + 1
			}
			continue
		}
		if n := len(groups); n > 0 && roles[n-1] == e.role {
			groups[n-1].to = i + 1
			continue
		}
		groups = append(groups, msgGroup{from: i, to: i + 1, mark: -1})
		roles = append(roles, e.role)
	}
	for _, gi := range d.marks(roles) {
		grp := &groups[gi]
		for i := grp.to - 1; i >= grp.from; i-- {
			if ns.enc[i].role != "" && ns.enc[i].markAt >= 0 {
				grp.mark = i
				break
			}
		}
	}
	holds := func(b []byte) bool { return len(apiKey) >= redactMin && bytes.Contains(b, []byte(apiKey)) }
	if kh := cas.Sum([]byte(apiKey)); kh != ns.keyHash {
		ns.keyHash = kh
		for k := range ns.groups {
			ns.groups[k].secret = holds(ns.groups[k].part.b)
		}
	}
	for k := range groups {
		grp := &groups[k]
		if k < len(ns.groups) {
			if prev := ns.groups[k]; prev.from == grp.from && prev.to == grp.to && prev.mark == grp.mark {
				grp.part, grp.secret = prev.part, prev.secret
				continue
			}
		}
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
	}
	for _, grp := range ns.groups {
		ns.size -= len(grp.part.b)
	}
	for _, grp := range groups {
		ns.size += len(grp.part.b)
	}
	ns.groups = groups

	h, err := head(ns)
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(h, ns.head.b) {
		ns.head = newPart(h)
	}
	body := &splicedBody{parts: make([]part, 0, len(groups)+2)}
	body.parts = append(body.parts, ns.head)
	body.secret = holds(ns.head.b)
	for _, grp := range groups {
		body.parts = append(body.parts, grp.part)
		body.secret = body.secret || grp.secret
	}
	body.parts = append(body.parts, bodyTail)
	for _, p := range body.parts {
		body.size += int64(len(p.b))
	}
	ok = true
	return body, ns, nil
}

// bodyTail ends the messages (the last member of a native request) and
// the request.
var bodyTail = newPart([]byte("]}"))

// cacheMarker is spliced into the block that ends a cached prefix
// (Anthropic's prompt caching).
const cacheMarker = `,"cache_control":{"type":"ephemeral"}`

// storeNative stores a native request's evidence from its parts,
// building on the chat's last request, and returns its ref. Parts that
// hold the API key are stored with it replaced.
func (g *Generator) storeNative(ctx context.Context, blobs Blobs, ns *nativeSession, body *splicedBody, apiKey string) (cas.Ref, error) {
	parts := make([][]byte, len(body.parts))
	sums := make([]cas.Ref, len(body.parts))
	for i, p := range body.parts {
		parts[i], sums[i] = p.b, p.sum
		if body.secret && len(apiKey) >= redactMin && bytes.Contains(p.b, []byte(apiKey)) {
			parts[i] = redactBytes(p.b, apiKey)
			sums[i] = cas.Sum(parts[i])
		}
	}
	var base chunked.Stored
	if ns != nil {
		ns.mu.Lock()
		base = ns.stored
		ns.mu.Unlock()
	}
	st, err := g.evidence.PutParts(ctx, blobs, base, parts, sums)
	if err != nil {
		return cas.Ref{}, fmt.Errorf("llm: store request: %w", err)
	}
	if ns != nil {
		ns.mu.Lock()
		ns.stored = st
		ns.mu.Unlock()
	}
	return st.Ref, nil
}
