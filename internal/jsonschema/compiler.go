package jsonschema

import (
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// A Compiler compiles schemas from the documents added to it
// (AddResource) and the drafts' meta-schemas; any other document comes
// from its loader (UseLoader), and without one is refused. It checks each
// document against its draft's meta-schema before compiling it. A
// Compiler is not safe for concurrent use; the schemas it returns are.
type Compiler struct {
	docs    map[string]any // documents by URL: added, loaded
	roots   map[string]*root
	schemas map[location]*Schema
	load    func(url string) (any, error)

	assertFormat bool // check format in every draft (the meta-schemas' compiler)
	isMeta       bool // compiling the meta-schemas themselves
}

// NewCompiler returns a compiler of schemas that default to draft
// 2020-12 when they name no $schema.
func NewCompiler() *Compiler {
	return &Compiler{docs: map[string]any{}, roots: map[string]*root{}, schemas: map[location]*Schema{}}
}

// UseLoader sets the function that gives the documents of URLs that are
// neither added nor meta-schemas; its error is the compile's, wrapped in a
// LoadURLError.
func (c *Compiler) UseLoader(load func(url string) (any, error)) { c.load = load }

// AddResource adds a schema document (as UnmarshalJSON decodes it) at an
// absolute URL; its fragment is ignored.
func (c *Compiler) AddResource(u string, doc any) error {
	base, _, err := absoluteURL(u)
	if err != nil {
		return err
	}
	if _, ok := c.docs[base]; ok || isMetaURL(base) {
		return fmt.Errorf("resource for %q already exists", base)
	}
	c.docs[base] = doc
	return nil
}

// Compile compiles the schema at an absolute URL (a fragment may point
// into the document or name an anchor).
func (c *Compiler) Compile(loc string) (*Schema, error) {
	u, frag, err := absoluteURL(loc)
	if err != nil {
		return nil, err
	}
	r, err := c.root(u)
	if err != nil {
		return nil, err
	}
	l, err := r.resolveFragment(frag, r.resources[""])
	if err != nil {
		return nil, err
	}
	return c.compile(l)
}

// loadDoc returns the document at u: an added one, a meta-schema, or the
// loader's.
func (c *Compiler) loadDoc(u string) (any, error) {
	if doc, ok := c.docs[u]; ok {
		return doc, nil
	}
	doc, err := metaDoc(u)
	if err != nil {
		return nil, err
	}
	if doc == nil {
		if c.load == nil {
			return nil, &LoadURLError{URL: u, Err: errors.New("no loader: only added resources and the drafts' meta-schemas")}
		}
		if doc, err = c.load(u); err != nil {
			return nil, &LoadURLError{URL: u, Err: err}
		}
	}
	c.docs[u] = doc
	return doc, nil
}

// A root is a loaded document: the schema resources in it (by pointer),
// and which of its subschemas have been looked through.
type root struct {
	url       string
	doc       any
	resources map[string]*resource
	done      map[string]bool
}

// A resource is a schema with its own base URL (the document, or a
// subschema with an id): its dialect and anchors.
type resource struct {
	ptr            string
	id             string
	dialect        dialect
	anchors        map[string]string // name → pointer
	dynamicAnchors []string
}

func newResource(ptr, id string) *resource {
	return &resource{ptr: ptr, id: id, anchors: map[string]string{}}
}

func (r *root) clone() *root {
	c := &root{url: r.url, doc: r.doc, resources: map[string]*resource{}, done: map[string]bool{}}
	for k := range r.done {
		c.done[k] = true
	}
	for k, res := range r.resources {
		cp := *res
		cp.anchors = map[string]string{}
		for a, p := range res.anchors {
			cp.anchors[a] = p
		}
		cp.dynamicAnchors = slices.Clone(res.dynamicAnchors)
		c.resources[k] = &cp
	}
	return c
}

// resource is the resource a pointer is in: the nearest one at or above it.
func (r *root) resource(ptr string) *resource {
	for {
		if res, ok := r.resources[ptr]; ok {
			return res
		}
		i := strings.LastIndexByte(ptr, '/')
		if i < 0 {
			return r.resources[""]
		}
		ptr = ptr[:i]
	}
}

// resourceWithID is the resource whose id is u, or nil.
func (r *root) resourceWithID(u string) *resource {
	for _, p := range sortedKeys(r.resources) {
		if res := r.resources[p]; res.id == u {
			return res
		}
	}
	return nil
}

// resolveFragment finds a fragment (a pointer or an anchor) in a resource.
func (r *root) resolveFragment(frag string, res *resource) (location, error) {
	if !isAnchor(frag) {
		return location{r.url, res.ptr + frag}, nil
	}
	p, ok := res.anchors[frag]
	if !ok {
		return location{}, fmt.Errorf("anchor in %q not found in schema %q", res.id+"#"+encodeFragment(frag), r.url)
	}
	return location{r.url, p}, nil
}

// root returns the loaded document at u, loading it (and checking it
// against its meta-schema) the first time.
func (c *Compiler) root(u string) (*root, error) {
	if r, ok := c.roots[u]; ok {
		return r, nil
	}
	doc, err := c.loadDoc(u)
	if err != nil {
		return nil, err
	}
	r := &root{url: u, doc: doc, resources: map[string]*resource{}, done: map[string]bool{}}
	if err := c.collectResources(r, doc, u, "", dialect{draft: draftLatest}); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(u, "http://json-schema.org/") && !strings.HasPrefix(u, "https://json-schema.org/") {
		if err := c.validateMeta(r, doc, ""); err != nil {
			return nil, err
		}
	}
	c.roots[u] = r
	return r, nil
}

// draftOf is the draft a schema's $schema names, following $schema
// through documents that are not drafts' meta-schemas.
func (c *Compiler) draftOf(l location, doc any, fallback *draft, seen map[string]bool) (*draft, error) {
	obj, _ := doc.(map[string]any)
	s, ok := obj["$schema"].(string)
	if !ok {
		return fallback, nil
	}
	if d := draftAt(s); d != nil {
		return d, nil
	}
	s, _ = splitHash(s)
	if _, err := url.Parse(s); err != nil {
		return nil, fmt.Errorf("invalid $schema in %q: %v", l.String(), err)
	}
	if l.ptr == "" && s == l.url {
		return nil, fmt.Errorf("draft %q is not supported", s)
	}
	if seen[s] {
		return nil, fmt.Errorf("cycle in resolving $schema in %q", s)
	}
	seen[s] = true
	meta, err := c.loadDoc(s)
	if err != nil {
		return nil, err
	}
	return c.draftOf(location{url: s}, meta, fallback, seen)
}

// vocabsOf lists the vocabularies of the meta-schema a schema's $schema
// names, when it is not a draft's.
func (c *Compiler) vocabsOf(doc any, d *draft) ([]string, error) {
	obj, _ := doc.(map[string]any)
	s, ok := obj["$schema"].(string)
	if !ok || draftAt(s) != nil {
		return nil, nil
	}
	s, _ = splitHash(s)
	if _, err := url.Parse(s); err != nil {
		return nil, &ParseURLError{URL: s, Err: err}
	}
	meta, err := c.loadDoc(s)
	if err != nil {
		return nil, err
	}
	return d.vocabsOf(s, meta)
}

// collectResources looks through a subschema (once) for resources (ids)
// and anchors, and through its own subschemas.
func (c *Compiler) collectResources(r *root, sch any, base, ptr string, fallback dialect) error {
	if r.done[ptr] {
		return nil
	}
	if err := c.collect(r, sch, base, ptr, fallback); err != nil {
		return err
	}
	r.done[ptr] = true
	return nil
}

func (c *Compiler) collect(r *root, sch any, base, ptr string, fallback dialect) error {
	obj, ok := sch.(map[string]any)
	if !ok {
		if ptr == "" {
			res := newResource("", base)
			res.dialect = fallback
			r.resources[""] = res
		}
		return nil
	}
	_, hasSchema := obj["$schema"].(string)
	d, err := c.draftOf(location{r.url, ptr}, sch, fallback.draft, map[string]bool{})
	if err != nil {
		return err
	}
	id := d.idOf(obj)
	if id == "" && ptr != "" {
		// $schema counts only where a resource starts.
		d, hasSchema = fallback.draft, false
		id = d.idOf(obj)
	}
	var res *resource
	if id != "" {
		u, _, err := resolveURL(base, id)
		if err != nil {
			return fmt.Errorf("error in parsing id at %q", location{r.url, ptr}.String())
		}
		base = u
		res = newResource(ptr, base)
	} else if ptr == "" {
		res = newResource(ptr, base)
	}
	if res != nil {
		if other := r.resourceWithID(base); other != nil {
			if other.ptr != ptr {
				return fmt.Errorf("duplicate id %q in %q at %q and %q", base, r.url, ptr, other.ptr)
			}
		} else {
			res.dialect = fallback
			if hasSchema {
				vocabs, err := c.vocabsOf(sch, d)
				if err != nil {
					return err
				}
				res.dialect = dialect{d, vocabs}
			}
			r.resources[ptr] = res
		}
	}
	baseRes := r.resourceWithID(base)
	if baseRes == nil {
		return fmt.Errorf("jsonschema: no resource for %q at %q", base, ptr)
	}
	if err := collectAnchors(r, sch, ptr, baseRes); err != nil {
		return err
	}
	subs := map[string]any{}
	for _, path := range d.subschemas {
		subschemasAt(sch, ptr, path, subs)
	}
	for _, p := range sortedKeys(subs) {
		if err := c.collectResources(r, subs[p], base, p, baseRes.dialect); err != nil {
			return err
		}
	}
	return nil
}

// subschemasAt adds to out the values at a keyword path below v.
func subschemasAt(v any, ptr string, path []string, out map[string]any) {
	if len(path) == 0 {
		out[ptr] = v
		return
	}
	switch tok := path[0]; tok {
	case "*":
		if obj, ok := v.(map[string]any); ok {
			for k, e := range obj {
				subschemasAt(e, pointer(ptr, k), path[1:], out)
			}
		}
	case "[]":
		if arr, ok := v.([]any); ok {
			for i, e := range arr {
				subschemasAt(e, pointer(ptr, strconv.Itoa(i)), path[1:], out)
			}
		}
	default:
		if obj, ok := v.(map[string]any); ok {
			if e, ok := obj[tok]; ok {
				subschemasAt(e, pointer(ptr, tok), path[1:], out)
			}
		}
	}
}

// collectAnchors records the anchors a schema object declares in its
// resource: before 2019-09 an id's fragment, then $anchor, and from
// 2020-12 $dynamicAnchor.
func collectAnchors(r *root, sch any, ptr string, res *resource) error {
	obj, ok := sch.(map[string]any)
	if !ok {
		return nil
	}
	add := func(name string) error {
		if p, ok := res.anchors[name]; ok {
			if p == ptr {
				return nil
			}
			return fmt.Errorf("duplicate anchor %q in %q at %q and %q", name, r.url, p, ptr)
		}
		res.anchors[name] = ptr
		return nil
	}
	v := res.dialect.draft.version
	if v < 2019 {
		if _, ok := obj["$ref"]; ok {
			return nil
		}
		if id, ok := obj[res.dialect.draft.id].(string); ok {
			_, frag, err := splitFragment(id)
			if err != nil {
				return fmt.Errorf("error in parsing anchor at %q", location{r.url, ptr}.String())
			}
			if isAnchor(frag) {
				if err := add(frag); err != nil {
					return err
				}
			}
		}
	}
	if v >= 2019 {
		if a, ok := obj["$anchor"].(string); ok {
			if err := add(a); err != nil {
				return err
			}
		}
	}
	if v >= 2020 {
		if a, ok := obj["$dynamicAnchor"].(string); ok {
			if err := add(a); err != nil {
				return err
			}
			res.dynamicAnchors = append(res.dynamicAnchors, a)
		}
	}
	return nil
}

// ensureSubschema makes sure a location that a reference leads to has been
// looked through, and checks it against its meta-schema if it had not
// (a reference into a place no keyword makes a subschema).
func (c *Compiler) ensureSubschema(l location) error {
	r, err := c.root(l.url)
	if err != nil {
		return err
	}
	if r.done[l.ptr] {
		return nil
	}
	v, err := lookup(r.doc, l)
	if err != nil {
		return err
	}
	rc := r.clone()
	base := rc.resource(l.ptr)
	if err := c.collectResources(rc, v, base.id, l.ptr, base.dialect); err != nil {
		return err
	}
	if _, ok := rc.resources[l.ptr]; !ok {
		if err := collectAnchors(rc, v, l.ptr, rc.resource(l.ptr)); err != nil {
			return err
		}
	}
	if err := c.validateMeta(rc, v, l.ptr); err != nil {
		return err
	}
	c.roots[l.url] = rc
	return nil
}

// validateMeta checks the schema at ptr against its dialect's meta-schema.
func (c *Compiler) validateMeta(r *root, v any, ptr string) error {
	if c.isMeta {
		return nil
	}
	meta, err := r.resource(ptr).dialect.metaSchema()
	if err != nil {
		return err
	}
	if err := meta.validateTop(v, meta, r.resources); err != nil {
		return &SchemaValidationError{URL: location{r.url, ptr}.String(), Err: err}
	}
	return nil
}

// compile compiles the schema at l and every schema it leads to, in the
// order they are met.
func (c *Compiler) compile(l location) (*Schema, error) {
	q := &queue{at: map[location]*Schema{}}
	c.enqueue(q, l)
	for i := 0; i < len(q.list); i++ {
		s := q.list[i]
		if err := c.ensureSubschema(s.loc); err != nil {
			return nil, err
		}
		r := c.roots[s.loc.url]
		v, err := lookup(r.doc, s.loc)
		if err != nil {
			return nil, err
		}
		if err := c.compileValue(v, s, r, q); err != nil {
			return nil, err
		}
	}
	for _, s := range q.list {
		c.schemas[s.loc] = s
	}
	return c.schemas[l], nil
}

// queue holds the schemas of one compile, in the order they are met.
type queue struct {
	list []*Schema
	at   map[location]*Schema
}

func (c *Compiler) enqueue(q *queue, l location) *Schema {
	if s, ok := c.schemas[l]; ok {
		return s
	}
	if s, ok := q.at[l]; ok {
		return s
	}
	s := &Schema{loc: l, Location: l.String()}
	q.list = append(q.list, s)
	q.at[l] = s
	return s
}

func (c *Compiler) compileValue(v any, s *Schema, r *root, q *queue) error {
	res := r.resource(s.loc.ptr)
	s.DraftVersion = res.dialect.draft.version
	s.resource = c.enqueue(q, location{s.loc.url, res.ptr})
	if s.DraftVersion >= 2020 && s.loc == s.resource.loc {
		for _, name := range sortedKeys(res.anchors) {
			if slices.Contains(res.dynamicAnchors, name) {
				if s.dynamicAnchors == nil {
					s.dynamicAnchors = map[string]*Schema{}
				}
				s.dynamicAnchors[name] = c.enqueue(q, location{s.loc.url, res.anchors[name]})
			}
		}
	}
	switch v := v.(type) {
	case bool:
		s.boolean = &v
	case map[string]any:
		if len(v) == 0 {
			t := true
			s.boolean = &t
			break
		}
		oc := objCompiler{c: c, obj: v, s: s, r: r, res: res, q: q}
		if err := oc.compile(); err != nil {
			return err
		}
	}
	s.allPropsEvaluated = s.additionalProperties != nil
	if s.DraftVersion < 2020 {
		s.allItemsEvaluated = s.additionalItems != nil
		switch items := s.items.(type) {
		case *Schema:
			s.allItemsEvaluated = true
		case []*Schema:
			s.numItemsEvaluated = len(items)
		}
	} else {
		s.allItemsEvaluated = s.items2020 != nil
		s.numItemsEvaluated = len(s.prefixItems)
	}
	return nil
}

// objCompiler compiles one schema object.
type objCompiler struct {
	c   *Compiler
	obj map[string]any
	s   *Schema
	r   *root
	res *resource
	q   *queue
}

func (oc *objCompiler) compile() error {
	s := oc.s
	if s.DraftVersion < 2019 {
		// An anchor is an id's fragment.
		if id, _ := oc.obj[oc.res.dialect.draft.id].(string); id != "" {
			if _, f := splitHash(id); f != "" {
				if _, err := url.PathUnescape(f); err != nil {
					return fmt.Errorf("error in parsing anchor at %q", s.Location)
				}
			}
		}
	}
	if err := oc.draft4(); err != nil {
		return err
	}
	if s.DraftVersion >= 6 {
		oc.draft6()
	}
	if s.DraftVersion >= 7 {
		oc.draft7()
	}
	if s.DraftVersion >= 2019 {
		if err := oc.draft2019(); err != nil {
			return err
		}
	}
	if s.DraftVersion >= 2020 {
		if err := oc.draft2020(); err != nil {
			return err
		}
	}
	return nil
}

func (oc *objCompiler) has(vocab string) bool { return oc.res.dialect.hasVocab(vocab) }

func (oc *objCompiler) draft4() error {
	s := oc.s
	var err error
	if s.ref, err = oc.enqueueRef("$ref"); err != nil {
		return err
	}
	if s.DraftVersion < 2019 && s.ref != nil {
		return nil // the other keywords beside $ref are ignored
	}
	if oc.has("applicator") {
		s.allOf = oc.enqueueArr("allOf")
		s.anyOf = oc.enqueueArr("anyOf")
		s.oneOf = oc.enqueueArr("oneOf")
		s.not = oc.enqueueProp("not")
		if s.DraftVersion < 2020 {
			if items, ok := oc.obj["items"]; ok {
				if _, ok := items.([]any); ok {
					s.items = oc.enqueueArr("items")
					s.additionalItems = oc.enqueueAdditional("additionalItems")
				} else {
					s.items = oc.enqueueProp("items")
				}
			}
		}
		s.properties = oc.enqueueMap("properties")
		if m := oc.enqueueMap("patternProperties"); m != nil {
			for _, p := range sortedKeys(m) {
				re, err := compileRegexp(p)
				if err != nil {
					return invalidRegex(s.loc.child("patternProperties"), p, err)
				}
				s.patternProperties = append(s.patternProperties, patternSchema{re, m[p]})
			}
		}
		s.additionalProperties = oc.enqueueAdditional("additionalProperties")
		if deps, ok := oc.obj["dependencies"].(map[string]any); ok {
			s.dependencies = map[string]any{}
			for _, name := range sortedKeys(deps) {
				if arr, ok := deps[name].([]any); ok {
					s.dependencies[name] = stringsOf(arr)
				} else {
					s.dependencies[name] = oc.c.enqueue(oc.q, location{s.loc.url, pointer(s.loc.ptr, "dependencies", name)})
				}
			}
		}
	}
	if oc.has("validation") {
		if t, ok := oc.obj["type"]; ok {
			s.types = typesOf(t)
		}
		if arr, ok := oc.obj["enum"].([]any); ok {
			s.enum = &enum{values: arr}
			for _, v := range arr {
				s.enum.types.add(typeOf(v))
			}
		}
		s.multipleOf = oc.num("multipleOf")
		s.maximum = oc.num("maximum")
		if oc.boolean("exclusiveMaximum") {
			s.exclusiveMaximum, s.maximum = s.maximum, nil
		} else {
			s.exclusiveMaximum = oc.num("exclusiveMaximum")
		}
		s.minimum = oc.num("minimum")
		if oc.boolean("exclusiveMinimum") {
			s.exclusiveMinimum, s.minimum = s.minimum, nil
		} else {
			s.exclusiveMinimum = oc.num("exclusiveMinimum")
		}
		s.minLength = oc.int("minLength")
		s.maxLength = oc.int("maxLength")
		if p, ok := oc.obj["pattern"].(string); ok {
			re, err := compileRegexp(p)
			if err != nil {
				return invalidRegex(s.loc.child("pattern"), p, err)
			}
			s.pattern = re
		}
		s.minItems = oc.int("minItems")
		s.maxItems = oc.int("maxItems")
		s.uniqueItems = oc.boolean("uniqueItems")
		s.maxProperties = oc.int("maxProperties")
		s.minProperties = oc.int("minProperties")
		if arr, ok := oc.obj["required"].([]any); ok {
			s.required = stringsOf(arr)
		}
	}
	if oc.assertFormat() {
		if f, ok := oc.obj["format"].(string); ok {
			s.format = formatNamed(f)
		}
	}
	return nil
}

// assertFormat tells whether format is checked: always before 2019-09,
// after it only when the meta-schema requires the format vocabulary
// (2019-09's format, 2020-12's format-assertion).
func (oc *objCompiler) assertFormat() bool {
	switch {
	case oc.c.assertFormat || oc.s.DraftVersion < 2019:
		return true
	case oc.s.DraftVersion == 2019:
		return oc.has("format")
	}
	return oc.has("format-assertion")
}

func (oc *objCompiler) draft6() {
	if oc.has("applicator") {
		oc.s.contains = oc.enqueueProp("contains")
		oc.s.propertyNames = oc.enqueueProp("propertyNames")
	}
	if oc.has("validation") {
		if v, ok := oc.obj["const"]; ok {
			oc.s.constant = &v
		}
	}
}

func (oc *objCompiler) draft7() {
	if !oc.has("applicator") {
		return
	}
	s := oc.s
	if s.ifSchema = oc.enqueueProp("if"); s.ifSchema != nil {
		b, isBool := oc.obj["if"].(bool)
		if !isBool || b {
			s.thenSchema = oc.enqueueProp("then")
		}
		if !isBool || !b {
			s.elseSchema = oc.enqueueProp("else")
		}
	}
}

func (oc *objCompiler) draft2019() error {
	s := oc.s
	var err error
	if s.recursiveRef, err = oc.enqueueRef("$recursiveRef"); err != nil {
		return err
	}
	s.recursiveAnchor = oc.boolean("$recursiveAnchor")
	if oc.has("validation") {
		if s.contains != nil {
			s.minContains = oc.int("minContains")
			s.maxContains = oc.int("maxContains")
		}
		if deps, ok := oc.obj["dependentRequired"].(map[string]any); ok {
			s.dependentRequired = map[string][]string{}
			for name, v := range deps {
				if arr, ok := v.([]any); ok {
					s.dependentRequired[name] = stringsOf(arr)
				}
			}
		}
	}
	if oc.has("applicator") {
		s.dependentSchemas = oc.enqueueMap("dependentSchemas")
	}
	unevaluated := oc.has("unevaluated")
	if s.DraftVersion == 2019 {
		unevaluated = oc.has("applicator")
	}
	if unevaluated {
		s.unevaluatedItems = oc.enqueueProp("unevaluatedItems")
		s.unevaluatedProperties = oc.enqueueProp("unevaluatedProperties")
	}
	return nil
}

func (oc *objCompiler) draft2020() error {
	s := oc.s
	ref, err := oc.enqueueRef("$dynamicRef")
	if err != nil {
		return err
	}
	if ref != nil {
		_, frag, err := splitFragment(oc.obj["$dynamicRef"].(string))
		if err != nil {
			return err
		}
		s.dynamicRef = ref
		if isAnchor(frag) {
			s.dynamicRefAnchor = frag
		}
	}
	s.dynamicAnchor, _ = oc.obj["$dynamicAnchor"].(string)
	if oc.has("applicator") {
		s.prefixItems = oc.enqueueArr("prefixItems")
		s.items2020 = oc.enqueueProp("items")
	}
	return nil
}

// enqueueRef resolves a reference keyword's URL against the resource's
// base: to a place in this document, or to another document (loaded).
func (oc *objCompiler) enqueueRef(keyword string) (*Schema, error) {
	ref, ok := oc.obj[keyword].(string)
	if !ok {
		return nil, nil
	}
	u, frag, err := resolveURL(oc.res.id, ref)
	if err != nil {
		return nil, err
	}
	var res *resource
	if u == oc.r.url {
		res = oc.r.resources[""]
	} else {
		res = oc.r.resourceWithID(u)
	}
	if res != nil {
		l, err := oc.r.resolveFragment(frag, res)
		if err != nil {
			return nil, err
		}
		return oc.c.enqueue(oc.q, location{oc.s.loc.url, l.ptr}), nil
	}
	r, err := oc.c.root(u)
	if err != nil {
		return nil, err
	}
	l, err := r.resolveFragment(frag, r.resources[""])
	if err != nil {
		return nil, err
	}
	return oc.c.enqueue(oc.q, l), nil
}

func (oc *objCompiler) enqueueProp(keyword string) *Schema {
	if _, ok := oc.obj[keyword]; !ok {
		return nil
	}
	return oc.c.enqueue(oc.q, location{oc.s.loc.url, pointer(oc.s.loc.ptr, keyword)})
}

func (oc *objCompiler) enqueueArr(keyword string) []*Schema {
	arr, ok := oc.obj[keyword].([]any)
	if !ok {
		return nil
	}
	out := make([]*Schema, len(arr))
	for i := range arr {
		out[i] = oc.c.enqueue(oc.q, location{oc.s.loc.url, pointer(oc.s.loc.ptr, keyword, strconv.Itoa(i))})
	}
	return out
}

func (oc *objCompiler) enqueueMap(keyword string) map[string]*Schema {
	obj, ok := oc.obj[keyword].(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]*Schema{}
	for _, k := range sortedKeys(obj) {
		out[k] = oc.c.enqueue(oc.q, location{oc.s.loc.url, pointer(oc.s.loc.ptr, keyword, k)})
	}
	return out
}

// enqueueAdditional reads additionalProperties or additionalItems: nil,
// a bool, or a *Schema.
func (oc *objCompiler) enqueueAdditional(keyword string) any {
	if b, ok := oc.obj[keyword].(bool); ok {
		return b
	}
	if s := oc.enqueueProp(keyword); s != nil {
		return s
	}
	return nil
}

func (oc *objCompiler) boolean(keyword string) bool {
	b, _ := oc.obj[keyword].(bool)
	return b
}

// num is a numeric keyword's exact value, or nil.
func (oc *objCompiler) num(keyword string) *big.Rat {
	v, ok := oc.obj[keyword]
	if !ok || !isNumber(v) {
		return nil
	}
	r, ok := exactRat(v)
	if !ok {
		return nil
	}
	return r
}

// int is an integer keyword's value, or nil (its low 64 bits for a larger
// one, as santhosh's).
func (oc *objCompiler) int(keyword string) *int {
	r := oc.num(keyword)
	if r == nil || !r.IsInt() {
		return nil
	}
	n := int(r.Num().Int64())
	return &n
}

func invalidRegex(at, re string, err error) error {
	return fmt.Errorf("invalid regex %q at %q: %v", re, at, err)
}

// stringsOf keeps the strings of an array.
func stringsOf(arr []any) []string {
	var out []string
	for _, v := range arr {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// typesOf reads type: a name or an array of names; unknown names are
// ignored, and none known is no type keyword.
func typesOf(v any) typeSet {
	var ts typeSet
	switch v := v.(type) {
	case string:
		ts.add(typeNamed(v))
	case []any:
		for _, e := range v {
			if s, ok := e.(string); ok {
				ts.add(typeNamed(s))
			}
		}
	}
	return ts
}

// AssertFormat makes format an assertion in every draft, not only before
// 2019-09 (santhosh's Compiler.AssertFormat).
func (c *Compiler) AssertFormat() { c.assertFormat = true }
