package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/openai/openai-go/v3"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/cas/chunked"
)

// A request is spliced, not encoded whole: its body is
//
//	head + segment₁ + "," + segment₂ + … + tail
//
// where head is the request's members before the transcript, encoded by
// the SDK's types each call (the settings and tools: small, and what
// changes), the segments are the transcript's items encoded once for the
// provider's dialect and kept by their identity (segCache), and tail
// closes the list and the object. A chat's next request differs from the
// one before by its last segments, so building it costs the new items, not
// the transcript. The evidence is the same bytes (a key found in them
// redacted), stored as content-defined chunks that build on the last
// request of the same transcript (chunked.Writer.PutAfter): the chunks of
// the bytes both share are not cut, hashed or stored again.
//
// The bytes are the ones the SDK made when it encoded the whole request,
// member for member (TestSpliceMatchesSDK): the SDK's encoding of a list
// is its elements' encodings joined with ",", and the transcript's member
// is written last, where the growing part of a request goes.

// segment is a transcript's part encoded for one dialect: one item for
// the Responses API, the messages a run of items becomes for Chat
// Completions.
type segment struct {
	ids  []itemID // the items it was made of
	body []byte   // nil: the items send nothing (a reasoning item left out)
	// checked and found say whether body holds the API key whose
	// fingerprint is checked (see redactFP).
	checked cas.Ref
	found   bool
}

// itemID names an item: its message blob and its index there.
type itemID struct {
	blob cas.Ref
	idx  int
}

func (it item) id() itemID { return itemID{it.blob, it.idx} }

// segKey finds a segment: the dialect (and the settings it depends on),
// its first item and how many items it has; ids tells apart segments of
// the same first item and length.
type segKey struct {
	dialect string
	first   itemID
	n       int
}

// segCache keeps encoded segments. Blobs never change, so a segment's
// bytes stay right as long as the dialect's settings are the same (they
// are part of the key). It is bounded: past segCacheBytes it starts over.
type segCache struct {
	mu    sync.Mutex
	m     map[segKey][]*segment
	bytes int
}

// segCacheBytes bounds the bytes a segCache holds.
const segCacheBytes = 64 << 20

// get returns the segment of items for dialect, making it with encode if
// it is not kept.
func (c *segCache) get(dialect string, items []item, encode func([]item) ([]byte, error)) (*segment, error) {
	k := segKey{dialect: dialect, first: items[0].id(), n: len(items)}
	c.mu.Lock()
	for _, s := range c.m[k] {
		if s.is(items) {
			c.mu.Unlock()
			return s, nil
		}
	}
	c.mu.Unlock()
	b, err := encode(items)
	if err != nil {
		return nil, err
	}
	s := &segment{body: b, ids: make([]itemID, len(items))}
	for i, it := range items {
		s.ids[i] = it.id()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+len(b) > segCacheBytes {
		c.m, c.bytes = map[segKey][]*segment{}, 0
	}
	c.m[k] = append(c.m[k], s)
	c.bytes += len(b) + 64
	return s, nil
}

// is reports whether s was made of items.
func (s *segment) is(items []item) bool {
	if len(s.ids) != len(items) {
		return false
	}
	for i, it := range items {
		if s.ids[i] != it.id() {
			return false
		}
	}
	return true
}

// spliced is a request body as its parts.
type spliced struct {
	head []byte
	// lead says the head ends with an element of the list, so that the
	// first segment follows a ",".
	lead bool
	segs []*segment
	tail []byte
	size int // the body's length, once known (0: not yet)
}

// add appends a segment (one that sends nothing is left out).
func (b *spliced) add(s *segment) {
	if s.body != nil {
		b.segs = append(b.segs, s)
	}
}

// part returns the body's i-th part: the head, then for each segment a
// separator (empty before the first, unless the head ends with an
// element) and its bytes, then the tail; ok is false past the last.
func (b *spliced) part(i int) (p []byte, ok bool) {
	switch n := len(b.segs); {
	case i == 0:
		return b.head, true
	case i == 2*n+1:
		return b.tail, true
	case i > 2*n+1:
		return nil, false
	case i%2 == 1:
		if i == 1 && !b.lead {
			return nil, true
		}
		return comma, true
	}
	return b.segs[i/2-1].body, true
}

// parts calls f with the body's parts in order, until f returns false.
func (b *spliced) parts(f func([]byte) bool) {
	for i := 0; ; i++ {
		p, ok := b.part(i)
		if !ok || !f(p) {
			return
		}
	}
}

var comma = []byte{','}

// Len is the body's length.
func (b *spliced) Len() int {
	if b.size > 0 {
		return b.size
	}
	n := len(b.head) + len(b.tail)
	for i, s := range b.segs {
		n += len(s.body)
		if i > 0 || b.lead {
			n++
		}
	}
	b.size = n
	return n
}

// From returns the body's bytes from off on, joined.
func (b *spliced) From(off int) []byte {
	out := make([]byte, 0, max(b.Len()-off, 0))
	at := 0
	b.parts(func(p []byte) bool {
		if at+len(p) > off {
			out = append(out, p[max(off-at, 0):]...)
		}
		at += len(p)
		return true
	})
	return out
}

// bytes returns the body, joined.
func (b *spliced) bytes() []byte { return b.From(0) }

// reader returns a reader of the body that does not join it: its WriteTo
// writes the parts one by one.
func (b *spliced) reader() io.Reader { return &splicedReader{b: b} }

// splicedReader reads a spliced body.
type splicedReader struct {
	b    *spliced
	rest []byte // what is left of the current part
	part int    // the next part's index
}

func (r *splicedReader) next() bool {
	for len(r.rest) == 0 {
		p, ok := r.b.part(r.part)
		if !ok {
			return false
		}
		r.rest = p
		r.part++
	}
	return true
}

func (r *splicedReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(r.rest) == 0 && !r.next() {
			if n == 0 {
				return 0, io.EOF
			}
			break
		}
		k := copy(p[n:], r.rest)
		n += k
		r.rest = r.rest[k:]
	}
	return n, nil
}

// WriteTo writes the body's parts to w, each as it is.
func (r *splicedReader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for r.next() {
		k, err := w.Write(r.rest)
		n += int64(k)
		r.rest = r.rest[k:]
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// openList makes the head of a body from the SDK's encoding of the
// request without its transcript (an object), the members to add after
// it (extra, such as `"stream":true`), and the transcript's member name:
// `{…,"stream":true,"input":[`.
func openList(enc []byte, extra string, member string) []byte {
	enc = bytes.TrimSpace(enc)
	head := make([]byte, 0, len(enc)+len(extra)+len(member)+8)
	head = append(head, enc[:len(enc)-1]...)
	for _, m := range []string{extra, `"` + member + `":[`} {
		if m == "" {
			continue
		}
		if len(head) > 1 {
			head = append(head, ',')
		}
		head = append(head, m...)
	}
	return head
}

// compactJSON returns raw without insignificant white space, as the SDK
// writes a raw value it is given (HTML characters are not escaped).
func compactJSON(raw []byte) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(raw))
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// chainState is what is kept of the last request of a transcript, for
// the next, which sends the same items and a few more: the message blobs
// and their items (not read or looked up again), the segments they were
// encoded as (not looked up again), the body's head and segments, and
// the chunks of its evidence (not cut or hashed again).
type chainState struct {
	dialect string
	refs    []cas.Ref
	ends    []int // ends[i] is how many items refs[:i+1] hold
	items   []item
	runs    []encodedRun // the encoded runs of items, in order
	// The arrays ends, items and runs live in: the next state extends
	// them in place when it keeps all of them (see extend).
	endsA  *arena[int]
	itemsA *arena[item]
	runsA  *arena[encodedRun]
	// cleanEnd says the last run ended at a clean point, not only where
	// the items did (see reuseRuns).
	cleanEnd bool
	head     []byte
	segs     []*segment // the body's segments, as sent
	chunks   *chunked.Chunks
}

// encodedRun is a run of the transcript's items, [start, end), and its segment.
type encodedRun struct {
	start, end int
	seg        *segment
}

// chains keeps the chain states of recent transcripts, by the dialect
// and the first message blob. It is bounded.
type chains struct {
	mu sync.Mutex
	m  map[chainKey]*chainState
}

type chainKey struct {
	dialect string
	first   cas.Ref
}

const chainsSize = 256

func (c *chains) get(dialect string, refs []cas.Ref) *chainState {
	if len(refs) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[chainKey{dialect, refs[0]}]
}

func (c *chains) put(st *chainState) {
	if len(st.refs) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= chainsSize {
		c.m = map[chainKey]*chainState{}
	}
	c.m[chainKey{st.dialect, st.refs[0]}] = st
}

// loadItems reads the transcript's items, taking those of the message
// blobs the last request of the same transcript (prev) began with from
// it. The state it returns holds refs, ends and items.
func (g *Generator) loadItems(ctx context.Context, blobs Blobs, refs []cas.Ref, prev *chainState) (*chainState, error) {
	same := 0
	if prev != nil {
		for same < len(refs) && same < len(prev.refs) && refs[same] == prev.refs[same] {
			same++
		}
	}
	if len(refs) == 0 {
		return nil, invalidf("message_refs is empty: give at least one message blob")
	}
	st := &chainState{refs: refs}
	var prevEnds []int
	var prevItems []item
	var endsA *arena[int]
	var itemsA *arena[item]
	if prev != nil {
		prevEnds, prevItems, endsA, itemsA = prev.ends, prev.items, prev.endsA, prev.itemsA
	}
	kept := 0
	if same > 0 {
		kept = prevEnds[same-1]
	}
	st.ends, st.endsA = extend(endsA, prevEnds, same)
	st.items, st.itemsA = extend(itemsA, prevItems, kept)
	for i := same; i < len(refs); i++ {
		its, err := loadMessageBlob(ctx, blobs, i, refs[i], &g.messages)
		if err != nil {
			return nil, err
		}
		st.items = append(st.items, its...)
		st.ends = append(st.ends, len(st.items))
	}
	st.endsA.release(st.ends)
	st.itemsA.release(st.items)
	return st, nil
}

// arena is the array successive states of a chain keep a list in: a
// state that keeps all of the last one's list appends to it in place,
// past its end, where nothing else looks, instead of copying it.
type arena[T any] struct {
	mu    sync.Mutex
	owner []T // the list that may be extended in place; nil once claimed
}

// extend returns a list holding prev[:kept] to append to, and its arena:
// prev itself, claimed from a, when kept is all of it and no one has
// extended it yet; otherwise a copy in a new arena.
func extend[T any](a *arena[T], prev []T, kept int) ([]T, *arena[T]) {
	if a != nil && kept > 0 && kept == len(prev) {
		a.mu.Lock()
		ok := len(a.owner) == kept && &a.owner[0] == &prev[0]
		if ok {
			a.owner = nil
		}
		a.mu.Unlock()
		if ok {
			return prev, a
		}
	}
	out := make([]T, kept, max(2*kept, 16))
	copy(out, prev[:kept])
	return out, &arena[T]{}
}

// release makes list the one the next state may extend in place.
func (a *arena[T]) release(list []T) {
	a.mu.Lock()
	a.owner = list
	a.mu.Unlock()
}

// reuse returns prev's run of items [start, end) if prev encoded the same
// items for the same dialect, nil if it did not.
func (prev *chainState) reuse(dialect string, start, end, sameItems int, at *int) *segment {
	if prev == nil || prev.dialect != dialect || end > sameItems {
		return nil
	}
	for *at < len(prev.runs) && prev.runs[*at].start < start {
		*at++
	}
	if *at < len(prev.runs) && prev.runs[*at].start == start && prev.runs[*at].end == end {
		return prev.runs[*at].seg
	}
	return nil
}

// sameItems is how many of st's first items prev had too.
func (st *chainState) sameItems(prev *chainState) int {
	if prev == nil {
		return 0
	}
	same := 0
	for same < len(st.refs) && same < len(prev.refs) && st.refs[same] == prev.refs[same] {
		same++
	}
	if same == 0 {
		return 0
	}
	return min(prev.ends[same-1], st.ends[same-1])
}

// redactFP is the fingerprint of an API key a segment was searched for.
func redactFP(key string) cas.Ref {
	if len(key) < redactMin {
		return cas.Ref{}
	}
	return cas.Sum([]byte("demiurge redact " + key))
}

// putEvidence stores the request body b as evidence, the API key
// redacted, building on the last request of the same transcript (prev,
// nil if none); it keeps what the next will build on in st.
func (g *Generator) putEvidence(ctx context.Context, blobs Blobs, b *spliced, prev, st *chainState, apiKey string) (cas.Ref, error) {
	fp := redactFP(apiKey)
	redact := false
	if fp.Valid() {
		key := []byte(apiKey)
		redact = bytes.Contains(b.head, key) || bytes.Contains(b.tail, key)
		// Each segment is searched once per key (segments are shared: what
		// was found is kept under the cache's lock).
		g.segs.mu.Lock()
		for _, s := range b.segs {
			if s.checked != fp {
				s.checked, s.found = fp, bytes.Contains(s.body, key)
			}
			redact = redact || s.found
		}
		g.segs.mu.Unlock()
	}
	if redact {
		// The bytes differ from the body sent: no chain.
		return g.evidence.Put(ctx, blobs, redactBytes(b.bytes(), apiKey))
	}
	same := 0
	var prevChunks *chunked.Chunks
	if prev != nil && prev.chunks != nil && bytes.Equal(prev.head, b.head) {
		same = len(b.head)
		for i, s := range b.segs {
			if i >= len(prev.segs) || prev.segs[i] != s {
				break
			}
			if i > 0 || b.lead {
				same++
			}
			same += len(s.body)
		}
		prevChunks = prev.chunks
	}
	ref, next, err := g.evidence.PutAfter(ctx, blobs, prevChunks, b, same)
	if err != nil {
		return cas.Ref{}, err
	}
	if st != nil {
		st.head, st.segs, st.chunks = b.head, b.segs, next
		g.chains.put(st)
	}
	return ref, nil
}

// spliceResponses makes the body of a Responses request (see
// buildResponsesParams): the SDK's encoding of the settings and tools,
// then the input, each item encoded once (compacted, without the members
// only Chat Completions takes, cut to MaxItemBytes) and kept. With
// previous_response_id only the items after the last model output are
// sent; reasoning items the call cannot take back are left out. The
// items prev (the last request of the transcript) encoded are not looked
// up again; st keeps the runs for the next.
func (g *Generator) spliceResponses(p Params, st, prev *chainState, tools []tool, m Model, stream bool, dialect string) (*spliced, error) {
	items := st.items
	rp, err := buildResponsesParams(p, items, tools, g.cfg.Store, m)
	if err != nil {
		return nil, err
	}
	store := g.cfg.Store
	send, offset := items, 0
	if p.PreviousResponseID != nil && *p.PreviousResponseID != "" {
		store = true
		send = itemsAfterLastOutput(items)
		offset = len(items) - len(send)
		prev = nil
	}
	enc, err := rp.MarshalJSON()
	if err != nil {
		return nil, invalidf("encode the request: %v", err)
	}
	extra := ""
	if stream {
		extra = `"stream":true`
	}
	b := &spliced{head: openList(enc, extra, "input"), tail: []byte("]}")}
	b.segs = make([]*segment, 0, len(send))
	sameItems, at := st.sameItems(prev), 0
	st.reuseRuns(prev, dialect, offset == 0, sameItems)
	if n := len(st.runs); n > 0 {
		at = n // the kept runs are not looked at again
		for _, r := range st.runs {
			b.add(r.seg)
		}
		send = send[st.runs[n-1].end:]
		offset = st.runs[n-1].end
	}
	encode := func(its []item) ([]byte, error) {
		it := shrinkItems(its, g.cfg.MaxItemBytes)[0]
		if !keepReasoning(it, store, m) {
			return nil, nil
		}
		out, err := compactJSON(responsesItem(it))
		if err != nil {
			return nil, invalidf("%s: %v", it.where(), err)
		}
		return out, nil
	}
	for i := range send {
		start := offset + i
		s := prev.reuse(dialect, start, start+1, sameItems, &at)
		if s == nil {
			if s, err = g.segs.get(dialect, send[i:i+1], encode); err != nil {
				return nil, err
			}
		}
		st.runs = append(st.runs, encodedRun{start, start + 1, s})
		b.add(s)
	}
	st.runsA.release(st.runs)
	st.cleanEnd = true // each item is a run
	return b, nil
}

// spliceChat makes the body of a Chat Completions request (see
// buildChatParams): the SDK's encoding of the settings and tools, then the
// messages: the system prompt's, and those of the transcript, made from
// runs of items that each end where the conversion holds nothing over
// (chatRuns), each run encoded once and kept. The runs prev (the last
// request of the transcript) encoded are not looked up again; st keeps
// the runs for the next.
func (g *Generator) spliceChat(p Params, st, prev *chainState, tools []tool, m Model, stream bool, dialect string) (*spliced, error) {
	cp, err := buildChatParams(p, tools, stream, m)
	if err != nil {
		return nil, err
	}
	enc, err := cp.MarshalJSON()
	if err != nil {
		return nil, invalidf("encode the request: %v", err)
	}
	extra := ""
	if stream {
		extra = `"stream":true`
	}
	b := &spliced{head: openList(enc, extra, "messages"), tail: []byte("]}")}
	if p.Instructions != nil {
		sys, err := openai.SystemMessage(*p.Instructions).MarshalJSON()
		if err != nil {
			return nil, invalidf("encode the system prompt: %v", err)
		}
		b.head, b.lead = append(b.head, sys...), true
	}
	encode := func(its []item) ([]byte, error) {
		msgs, err := chatMessages(shrinkItems(its, g.cfg.MaxItemBytes), m.ReasoningEcho, m.ReasoningRefused)
		if err != nil {
			return nil, err
		}
		if len(msgs) == 0 {
			return nil, nil
		}
		var out []byte
		for i, msg := range msgs {
			mb, err := msg.MarshalJSON()
			if err != nil {
				return nil, invalidf("encode a message: %v", err)
			}
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, mb...)
		}
		return out, nil
	}
	sameItems, at := st.sameItems(prev), 0
	st.reuseRuns(prev, dialect, true, sameItems)
	from := 0
	if n := len(st.runs); n > 0 {
		at = n
		for _, r := range st.runs {
			b.add(r.seg)
		}
		from = st.runs[n-1].end
	}
	runs, clean := chatRuns(st.items[from:], from)
	st.cleanEnd = clean
	for _, r := range runs {
		s := prev.reuse(dialect, r[0], r[1], sameItems, &at)
		if s == nil {
			if s, err = g.segs.get(dialect, st.items[r[0]:r[1]], encode); err != nil {
				return nil, err
			}
		}
		st.runs = append(st.runs, encodedRun{r[0], r[1], s})
		b.add(s)
	}
	st.runsA.release(st.runs)
	return b, nil
}

// reuseRuns starts st's runs with those of prev (encoded for the same
// dialect, and ok) that lie in the items both have (sameItems) and ended
// at a clean point — where the items after them are converted apart: all
// of prev's, but a last one that ended only because prev's items did.
func (st *chainState) reuseRuns(prev *chainState, dialect string, ok bool, sameItems int) {
	var prevRuns []encodedRun
	var runsA *arena[encodedRun]
	keep := 0
	if ok && prev != nil && prev.dialect == dialect && len(prev.runs) > 0 && prev.runs[0].start == 0 {
		prevRuns, runsA = prev.runs, prev.runsA
		for keep < len(prevRuns) && prevRuns[keep].end <= sameItems && (keep < len(prevRuns)-1 || prev.cleanEnd) {
			keep++
		}
	}
	st.runs, st.runsA = extend(runsA, prevRuns, keep)
}

// chatRuns splits a transcript into the runs of items chatMessages can
// convert apart, as [start, end) index pairs: a run ends where the
// conversion holds nothing over for the items after it — after a user,
// system or developer message, or a tool's output, with no reasoning
// waiting for the next assistant message. Converting each run and joining
// the messages is converting the whole.
func chatRuns(items []item, offset int) (runs [][2]int, cleanEnd bool) {
	runs = make([][2]int, 0, len(items)/2+1)
	start := 0
	pending := false // reasoning waits for an assistant message
	for i, it := range items {
		switch k := it.kind(); {
		case k == "reasoning":
			pending = true
		case k == "message" && it.head.Role == "assistant":
			pending = false
		case k == "function_call":
			pending = false
		case k == "message":
			// A user, system or developer message drops the reasoning
			// before it, and leaves nothing open.
			pending = false
			runs = append(runs, [2]int{offset + start, offset + i + 1})
			start = i + 1
		case k == "function_call_output":
			if !pending {
				runs = append(runs, [2]int{offset + start, offset + i + 1})
				start = i + 1
			}
		}
	}
	if start < len(items) {
		runs = append(runs, [2]int{offset + start, offset + len(items)})
		return runs, false
	}
	return runs, true
}

// dialect names the dialect a call's items are encoded in, with the
// settings their encoding depends on.
func (g *Generator) dialect(provider string, p Params, m Model) string {
	if provider == ProviderChat {
		return fmt.Sprint("chat ", m.ReasoningEcho, " ", m.ReasoningRefused, " ", g.cfg.MaxItemBytes)
	}
	store := g.cfg.Store || p.PreviousResponseID != nil && *p.PreviousResponseID != ""
	return fmt.Sprint("responses ", store, " ", m.EncryptedReasoning, " ", m.ReasoningEcho, " ", g.cfg.MaxItemBytes)
}
