package llmtest

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
)

// promptCache plays a provider's prompt cache: it remembers the prefixes
// of the requests it saw, by hash, and says of a request how many of its
// tokens were read from the cache and how many written to it.
//
// Anthropic caches at the blocks that carry a cache marker (cache_control):
// a marker reads the longest prefix cached at it or at one of the 20
// blocks before it, and the request's prefixes up to its markers are
// written. Gemini caches implicitly: a request reads the longest prefix
// of an earlier one, and all of its prefixes are kept. Tokens are a
// quarter of the prefix's bytes; there is no minimum length.
type promptCache struct {
	mu   sync.Mutex
	seen map[[32]byte]bool
}

// cacheUse is what a request read from the cache and wrote to it, in
// tokens.
type cacheUse struct{ read, write int64 }

// unit is a block of a request as the cache sees it: its bytes without a
// cache marker, and whether it carried one.
type unit struct {
	b      []byte
	n      int // its bytes as the request sent them, which its tokens count
	marked bool
}

// units returns the units of a request of api: each tool, system block
// and message block in order (Anthropic), or the system instruction,
// the tools and each content's parts (Gemini).
func units(api string, raw map[string]json.RawMessage) []unit {
	var out []unit
	add := func(role string, v json.RawMessage) {
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil || m == nil {
			out = append(out, unit{b: append([]byte(role+":"), v...), n: len(v)})
			return
		}
		_, marked := m["cache_control"]
		delete(m, "cache_control")
		b, _ := json.Marshal(m)
		out = append(out, unit{b: append([]byte(role+":"), b...), n: len(v), marked: marked})
	}
	list := func(role string, v json.RawMessage) {
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			if len(v) > 0 {
				add(role, v)
			}
			return
		}
		for _, it := range items {
			add(role, it)
		}
	}
	switch api {
	case APIAnthropic:
		list("tool", raw["tools"])
		list("system", raw["system"])
		var msgs []aMessage
		_ = json.Unmarshal(raw["messages"], &msgs)
		for _, m := range msgs {
			var s string
			if json.Unmarshal(m.Content, &s) == nil {
				add(m.Role, m.Content)
				continue
			}
			list(m.Role, m.Content)
		}
	case APIGemini:
		add("system", raw["systemInstruction"])
		add("tools", raw["tools"])
		var contents []struct {
			Role  string          `json:"role"`
			Parts json.RawMessage `json:"parts"`
		}
		_ = json.Unmarshal(raw["contents"], &contents)
		for _, c := range contents {
			list(c.Role, c.Parts)
		}
	}
	return out
}

// use records a request of api and returns what it read and wrote.
func (c *promptCache) use(api string, raw map[string]json.RawMessage) cacheUse {
	us := units(api, raw)
	hashes := make([][32]byte, len(us))
	toks := make([]int64, len(us))
	var h [32]byte
	var n int64
	for i, u := range us {
		h = sha256.Sum256(append(h[:], u.b...))
		n += int64(u.n)
		hashes[i], toks[i] = h, n/4
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[[32]byte]bool{}
	}
	var use cacheUse
	switch api {
	case APIAnthropic:
		last := -1
		for k, u := range us {
			if !u.marked {
				continue
			}
			last = k
			for j := k; j >= 0 && j >= k-20; j-- {
				if c.seen[hashes[j]] {
					use.read = max(use.read, toks[j])
					break
				}
			}
		}
		if last >= 0 {
			use.write = max(toks[last]-use.read, 0)
		}
		for k, u := range us {
			if u.marked {
				c.seen[hashes[k]] = true
			}
		}
	case APIGemini:
		for j := len(us) - 1; j >= 0; j-- {
			if c.seen[hashes[j]] {
				use.read = toks[j]
				break
			}
		}
		for _, hh := range hashes {
			c.seen[hh] = true
		}
	}
	return use
}
