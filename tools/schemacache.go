package tools

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/demiurge-dev/demiurge/internal/jsonschema"
)

// CompileSchema compiles the JSON Schema raw (a tool's input schema) as
// the resource url, with NewSchemaCompiler. The result is the same for
// the same url and bytes, so the process keeps it: the next world that
// opens with the same tool (every case of an eval, every world a server
// opens, every test) takes the compiled schema instead of compiling it
// again, which is most of what building a tool costs. A compiled schema
// is safe for concurrent use. Errors are kept too (the same bytes fail
// the same way). The cache holds at most schemaCacheMax schemas and
// schemaCacheBytes of their text, and starts again when either is
// reached.
func CompileSchema(url string, raw []byte) (*jsonschema.Schema, error) {
	key := url + "\x00" + string(raw)
	if e, ok := schemas.get(key); ok {
		return e.schema, e.err
	}
	sch, err := compileSchema(url, raw)
	schemas.put(key, schemaEntry{sch, err})
	return sch, err
}

func compileSchema(url string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := NewSchemaCompiler()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// SetSchemaCache turns CompileSchema's cache on or off (it is on) and
// returns whether it was on: benchmarks measure what it saves. Turned
// off, it forgets what it held.
func SetSchemaCache(on bool) (was bool) {
	schemas.mu.Lock()
	defer schemas.mu.Unlock()
	was = !schemas.off
	schemas.off = !on
	if !on {
		schemas.m, schemas.bytes = nil, 0
	}
	return was
}

// The bounds of CompileSchema's cache.
const (
	schemaCacheMax   = 4096
	schemaCacheBytes = 32 << 20
)

type schemaEntry struct {
	schema *jsonschema.Schema
	err    error
}

type schemaCache struct {
	mu    sync.Mutex
	off   bool
	m     map[string]schemaEntry
	bytes int
}

var schemas schemaCache

func (c *schemaCache) get(key string) (schemaEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[key]
	return e, ok
}

func (c *schemaCache) put(key string, e schemaEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.off || len(key) > schemaCacheBytes {
		return
	}
	if _, ok := c.m[key]; ok {
		return
	}
	if c.m == nil || len(c.m) >= schemaCacheMax || c.bytes+len(key) > schemaCacheBytes {
		c.m, c.bytes = map[string]schemaEntry{}, 0
	}
	c.m[key] = e
	c.bytes += len(key)
}
