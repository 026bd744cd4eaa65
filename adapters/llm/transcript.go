package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
)

// item is one Responses input item of the transcript.
type item struct {
	raw  json.RawMessage // the item's JSON, as in its blob
	blob cas.Ref         // the message blob it came from
	idx  int             // its index in that blob (0 for an object or text blob)
	head itemHead        // the fields every item is classified by
}

// itemHead holds the fields that say what an item is.
type itemHead struct {
	Type string `json:"type"`
	Role string `json:"role"`
}

// where names the item in error messages.
func (it item) where() string {
	return fmt.Sprintf("message blob %s item %d", it.blob.Short(), it.idx)
}

// kind returns the item's type, "message" for a message without one.
func (it item) kind() string {
	if it.head.Type == "" && it.head.Role != "" {
		return "message"
	}
	return it.head.Type
}

// isModelOutput reports whether the item is something a model produced (an
// assistant message, reasoning, a tool call), as opposed to an input the
// caller produced (a user, system or developer message, a tool's output).
func (it item) isModelOutput() bool {
	switch k := it.kind(); {
	case k == "message":
		return it.head.Role == "assistant"
	case strings.HasSuffix(k, "_output"), k == "mcp_approval_response", k == "item_reference":
		return false
	default:
		return true
	}
}

// loadTranscript reads the message blobs in order and returns their items.
// A blob is a JSON array of items, one JSON object item, or (anything else)
// the text of a user message.
// Blobs already parsed come from cache (which may be nil): a chat sends
// its whole transcript with every call, so without it a chat of n calls
// would read and parse O(n²) blobs.
func loadTranscript(ctx context.Context, g cas.Getter, refs []cas.Ref, cache *messagesCache) ([]item, error) {
	if len(refs) == 0 {
		return nil, invalidf("message_refs is empty: give at least one message blob")
	}
	var items []item
	for i, ref := range refs {
		its, err := loadMessageBlob(ctx, g, i, ref, cache)
		if err != nil {
			return nil, err
		}
		items = append(items, its...)
	}
	return items, nil
}

// loadMessageBlob returns the items of the i-th message blob, ref, from
// cache (which may be nil) or g.
func loadMessageBlob(ctx context.Context, g cas.Getter, i int, ref cas.Ref, cache *messagesCache) ([]item, error) {
	if its, ok := cache.get(ref); ok {
		return its, nil
	}
	b, err := g.Get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("%w: message_refs[%d] %s: %w", ErrInvalidParams, i, ref, err)
	}
	its, err := parseMessageBlob(ref, b)
	if err != nil {
		return nil, fmt.Errorf("%w: message_refs[%d]: %w", ErrInvalidParams, i, err)
	}
	cache.put(ref, its, len(b))
	return its, nil
}

// messagesCache keeps parsed message blobs by ref (blobs never change).
// Items are shared: their raw JSON is never modified.
type messagesCache struct {
	mu    sync.Mutex
	m     map[cas.Ref][]item
	bytes int
}

// messagesCacheBytes bounds the blob bytes a messagesCache holds.
const messagesCacheBytes = 16 << 20

func (c *messagesCache) get(ref cas.Ref) ([]item, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	its, ok := c.m[ref]
	return its, ok
}

func (c *messagesCache) put(ref cas.Ref, its []item, size int) {
	if c == nil || size > messagesCacheBytes/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || c.bytes+size > messagesCacheBytes {
		c.m, c.bytes = map[cas.Ref][]item{}, 0 // a simple bound: start over
	}
	c.m[ref] = its
	c.bytes += size
}

// parseMessageBlob splits one message blob into items.
func parseMessageBlob(ref cas.Ref, b []byte) ([]item, error) {
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) > 0 && (trimmed[0] == '[' || trimmed[0] == '{') && json.Valid(trimmed) {
		if trimmed[0] == '{' {
			it, err := parseItem(ref, 0, trimmed)
			if err != nil {
				return nil, err
			}
			return []item{it}, nil
		}
		var raws []json.RawMessage
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return nil, fmt.Errorf("message blob %s: %w", ref.Short(), err)
		}
		items := make([]item, 0, len(raws))
		for i, raw := range raws {
			it, err := parseItem(ref, i, raw)
			if err != nil {
				return nil, err
			}
			items = append(items, it)
		}
		return items, nil
	}
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("message blob %s is empty: write the user's text, or a JSON item", ref.Short())
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("message blob %s is neither JSON nor UTF-8 text", ref.Short())
	}
	raw, err := json.Marshal(userText{Content: string(b), Role: "user"})
	if err != nil {
		return nil, fmt.Errorf("message blob %s: %w", ref.Short(), err)
	}
	return []item{{raw: raw, blob: ref, head: itemHead{Role: "user"}}}, nil
}

// userText is the item a raw-text blob becomes, with the field order the
// SDK writes ({"content":…,"role":"user"}).
type userText struct {
	Content string `json:"content"`
	Role    string `json:"role"`
}

// parseItem checks that raw is a JSON object that says what it is.
func parseItem(ref cas.Ref, idx int, raw json.RawMessage) (item, error) {
	it := item{raw: raw, blob: ref, idx: idx}
	if len(raw) == 0 || raw[0] != '{' {
		return it, fmt.Errorf("%s: want a JSON object, got %s", it.where(), clipText(string(raw), 40))
	}
	if err := json.Unmarshal(raw, &it.head); err != nil {
		return it, fmt.Errorf("%s: type and role must be strings: %w", it.where(), err)
	}
	switch {
	case it.head.Type == "" && it.head.Role == "":
		return it, fmt.Errorf("%s has neither \"type\" nor \"role\": write {\"role\":\"user\",\"content\":\"…\"} or a typed item such as {\"type\":\"function_call_output\",…}", it.where())
	case it.head.Role == "tool":
		return it, fmt.Errorf("%s has role \"tool\", the Chat Completions shape: write {\"type\":\"function_call_output\",\"call_id\":…,\"output\":…} instead", it.where())
	}
	return it, nil
}

// tool is one tool of the tools blob, in the flat Responses shape.
type tool struct {
	raw  json.RawMessage // the tool as written (flattened if it was nested)
	typ  string
	name string       // function name ("" for non-function tools)
	fn   functionTool // decoded, for function tools
	err  error        // why a function tool does not decode
	// resp is the function tool as a Responses request sends it, marshaled
	// once when the blob is parsed (the JSON Schemas of a chat's tools are
	// most of its request, and the same in every one); nil if it does not
	// marshal, and for other tools.
	resp json.RawMessage
}

// toolHead holds the fields of a tool that are read.
type toolHead struct {
	Type     string          `json:"type"`
	Name     string          `json:"name"`
	Function json.RawMessage `json:"function"`
}

// loadTools reads and checks the tools blob: {"tools":[...]} or a bare array.
func loadTools(ctx context.Context, g cas.Getter, ref cas.Ref) ([]tool, error) {
	b, err := g.Get(ctx, ref)
	if err != nil {
		return nil, fmt.Errorf("%w: tools_ref %s: %w", ErrInvalidParams, ref, err)
	}
	key := cas.Sum(b)
	parsedTools.mu.Lock()
	tools, ok := parsedTools.m[key]
	parsedTools.mu.Unlock()
	if ok {
		return tools, nil
	}
	tools, err = parseTools(b)
	if err != nil {
		return nil, fmt.Errorf("%w: tools blob %s: %w", ErrInvalidParams, ref.Short(), err)
	}
	parsedTools.mu.Lock()
	defer parsedTools.mu.Unlock()
	if parsedTools.m == nil || len(parsedTools.m) >= toolsCacheSize {
		parsedTools.m = map[cas.Ref][]tool{} // a simple bound: start over
	}
	parsedTools.m[key] = tools
	return tools, nil
}

// parsedTools keeps the process's parsed tools blobs by the hash of their
// bytes (not by the ref asked for, so a getter's wrong bytes are never
// read as another's): every request of a chat, and every world with the
// same tools (an eval's cases; a cassette's recorded requests, compared
// with each call's), sends the same blob. Parsing is a pure function of
// the bytes, and parsed tools are never modified.
var parsedTools struct {
	mu sync.Mutex
	m  map[cas.Ref][]tool
}

// toolsCache keeps parsed tools blobs by ref: a chat sends the same blob
// with every request. (Parsed tools are never modified.)
type toolsCache struct {
	mu sync.Mutex
	m  map[cas.Ref][]tool
}

const toolsCacheSize = 64

func (c *toolsCache) load(ctx context.Context, g cas.Getter, ref cas.Ref) ([]tool, error) {
	c.mu.Lock()
	ts, ok := c.m[ref]
	c.mu.Unlock()
	if ok {
		return ts, nil
	}
	ts, err := loadTools(ctx, g, ref)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= toolsCacheSize {
		c.m = map[cas.Ref][]tool{} // a simple bound: start over
	}
	c.m[ref] = ts
	return ts, nil
}

// parseTools parses the bytes of a tools blob.
func parseTools(b []byte) ([]tool, error) {
	b = bytes.TrimSpace(b)
	if !json.Valid(b) {
		return nil, fmt.Errorf("not JSON: want {\"tools\":[…]} or […]")
	}
	var raws []json.RawMessage
	switch {
	case len(b) > 0 && b[0] == '[':
		if err := json.Unmarshal(b, &raws); err != nil {
			return nil, err
		}
	case len(b) > 0 && b[0] == '{':
		var wrapper struct {
			Tools *[]json.RawMessage `json:"tools"`
		}
		if err := json.Unmarshal(b, &wrapper); err != nil {
			return nil, fmt.Errorf("\"tools\" must be an array: %w", err)
		}
		if wrapper.Tools == nil {
			return nil, fmt.Errorf("no \"tools\" key: want {\"tools\":[…]} or […]")
		}
		raws = *wrapper.Tools
	default:
		return nil, fmt.Errorf("want {\"tools\":[…]} or […], got %s", clipText(string(b), 40))
	}
	tools := make([]tool, 0, len(raws))
	var names []string
	for i, raw := range raws {
		t, err := parseTool(raw)
		if err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		if t.name != "" {
			if slices.Contains(names, t.name) {
				return nil, fmt.Errorf("tools[%d]: function %q is defined twice", i, t.name)
			}
			names = append(names, t.name)
		}
		if t.typ == "function" && t.err == nil {
			// An error here is reported, where it happens, by a request
			// that marshals the tool itself.
			t.resp, _ = responsesFunctionTool(t.fn).MarshalJSON()
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// parseTool checks one tool and flattens the nested Chat Completions shape.
func parseTool(raw json.RawMessage) (tool, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return tool{}, fmt.Errorf("want a JSON object, got %s", clipText(string(raw), 40))
	}
	var h toolHead
	if err := json.Unmarshal(raw, &h); err != nil {
		return tool{}, fmt.Errorf("type and name must be strings: %w", err)
	}
	if h.Type == "" {
		return tool{}, fmt.Errorf("no \"type\": write {\"type\":\"function\",\"name\":…}")
	}
	if h.Type != "function" {
		return tool{raw: raw, typ: h.Type}, nil
	}
	t := tool{raw: raw, typ: "function", name: h.Name}
	if len(h.Function) > 0 && h.Name == "" {
		// Nested Chat Completions shape: {"type":"function","function":{...}}.
		flat, name, err := flattenFunction(h.Function)
		if err != nil {
			return tool{}, err
		}
		t.raw, t.name = flat, name
	}
	if t.name == "" {
		return tool{}, fmt.Errorf("function tool has no \"name\"")
	}
	// Decoded here, once per tools blob (the blob is cached); a tool
	// that does not decode fails the requests that send it.
	t.fn, t.err = decodeFunctionTool(t.raw)
	return t, nil
}

// flattenFunction turns the "function" object of a Chat Completions tool
// into a flat Responses function tool.
func flattenFunction(fn json.RawMessage) (json.RawMessage, string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(fn, &fields); err != nil || fields == nil {
		return nil, "", fmt.Errorf("\"function\" must be an object")
	}
	var name string
	if err := json.Unmarshal(fields["name"], &name); err != nil || name == "" {
		return nil, "", fmt.Errorf("function tool has no \"name\"")
	}
	fields["type"] = json.RawMessage(`"function"`)
	flat, err := json.Marshal(fields)
	if err != nil {
		return nil, "", err
	}
	return flat, name, nil
}

// functionTool is the part of a function tool that is sent.
type functionTool struct {
	Name        string
	Description *string
	Parameters  map[string]any // top-level keys; values are json.RawMessage; nil if absent
	Strict      bool           // false if absent
	Extra       map[string]any // other fields, values json.RawMessage, passed through
}

// function returns the decoded function tool.
func (t tool) function() (functionTool, error) {
	if t.err != nil {
		return functionTool{}, t.err
	}
	return t.fn, nil
}

// decodeFunctionTool reads a flat function tool.
func decodeFunctionTool(raw json.RawMessage) (functionTool, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return functionTool{}, err
	}
	var ft functionTool
	if err := json.Unmarshal(fields["name"], &ft.Name); err != nil {
		return functionTool{}, fmt.Errorf("function tool: field \"name\": %w", err)
	}
	// In key order, so a tool with two bad fields gets the same error on
	// every run.
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		v := fields[k]
		var err error
		switch k {
		case "type", "name":
		case "description":
			if string(v) != "null" {
				ft.Description = new(string)
				err = json.Unmarshal(v, ft.Description)
			}
		case "parameters":
			if string(v) != "null" {
				ft.Parameters, err = rawObject(v)
			}
		case "strict":
			if string(v) != "null" {
				err = json.Unmarshal(v, &ft.Strict)
			}
		default:
			if ft.Extra == nil {
				ft.Extra = map[string]any{}
			}
			ft.Extra[k] = v
		}
		if err != nil {
			return functionTool{}, fmt.Errorf("function %q: field %q: %w", ft.Name, k, err)
		}
	}
	return ft, nil
}

// rawObject splits a JSON object into its members, each kept as written
// (so numbers are not rounded through float64). The SDK encodes the map
// with its keys sorted.
func rawObject(b []byte) (map[string]any, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil || fields == nil {
		return nil, fmt.Errorf("want a JSON object, got %s", clipText(string(b), 40))
	}
	m := make(map[string]any, len(fields))
	for k, v := range fields {
		m[k] = v
	}
	return m, nil
}

// shrinkItems returns items with every item longer than max bytes cut
// down to about max: the longest of its texts (a message's content or
// text parts, a call's arguments, a tool's output) is cut on a UTF-8
// boundary and ends with a note of its size. Reasoning items are never
// cut (their encrypted content must go back whole). items itself is not
// changed.
func shrinkItems(items []item, max int) []item {
	var out []item
	for i, it := range items {
		if len(it.raw) <= max || it.kind() == "reasoning" {
			continue
		}
		small, ok := shrinkItem(it.raw, max)
		if !ok {
			continue
		}
		if out == nil {
			out = slices.Clone(items)
		}
		out[i].raw = small
	}
	if out == nil {
		return items
	}
	return out
}

// shrinkNote ends a text that was cut for sending.
const shrinkNote = "\n[cut for sending: %d bytes in all; the store keeps the whole]"

// shrinkItem cuts raw's longest text so that raw fits in about max bytes;
// it reports false if raw has no text to cut.
func shrinkItem(raw json.RawMessage, max int) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if dec.Decode(&m) != nil {
		return nil, false
	}
	// The longest text, and how to set it.
	var longest string
	var set func(string)
	consider := func(s string, f func(string)) {
		if len(s) > len(longest) {
			longest, set = s, f
		}
	}
	for _, k := range []string{"arguments", "output", "content"} {
		switch v := m[k].(type) {
		case string:
			consider(v, func(s string) { m[k] = s })
		case []any:
			for _, p := range v {
				if pm, ok := p.(map[string]any); ok {
					if t, ok := pm["text"].(string); ok {
						consider(t, func(s string) { pm["text"] = s })
					}
				}
			}
		}
	}
	if set == nil {
		return nil, false
	}
	over := len(raw) - max + len(shrinkNote) + 32
	keep := len(longest) - over
	if keep < 0 {
		keep = 0
	}
	for keep > 0 && !utf8.RuneStart(longest[keep]) {
		keep--
	}
	set(longest[:keep] + fmt.Sprintf(shrinkNote, len(longest)))
	out, err := marshalNoEscape(m)
	if err != nil {
		return nil, false
	}
	return out, true
}
