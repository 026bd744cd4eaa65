package schema

import "sort"

// objReader reads the members of a JSON object strictly: every member must
// be read by someone, and done reports the ones nobody asked for.
type objReader struct {
	n    *jnode
	errs *problems
	what string // "defplan", "emit_effect step", ... for messages
	used map[string]bool
}

func newObjReader(n *jnode, errs *problems, what string) *objReader {
	if n.kind != jObject {
		errs.add(n.ptr, "%s must be an object, got %s", what, n.kind)
		return nil
	}
	return &objReader{n: n, errs: errs, what: what, used: map[string]bool{"$comment": true}}
}

// node returns the member named key, or nil; required reports its absence.
func (r *objReader) node(key string, required bool) *jnode {
	r.used[key] = true
	v := r.n.get(key)
	if v == nil && required {
		r.errs.add(r.n.ptr, "%s is missing required member %q", r.what, key)
	}
	return v
}

// str returns a text member.
func (r *objReader) str(key string, required bool) string {
	v := r.node(key, required)
	if v == nil {
		return ""
	}
	if v.kind != jString {
		r.errs.add(v.ptr, "%s member %q must be text, got %s", r.what, key, v.kind)
		return ""
	}
	return v.str
}

// name returns a member holding an AIR name.
func (r *objReader) name(key string, required bool) string {
	s := r.str(key, required)
	if s != "" {
		if err := checkName(s); err != nil {
			r.errs.add(r.n.get(key).ptr, "%v", err)
		}
	}
	return s
}

// strList returns a member holding an array of text, with each element's
// pointer.
func (r *objReader) strList(key string, required bool) ([]string, []string) {
	v := r.node(key, required)
	if v == nil {
		return nil, nil
	}
	if v.kind != jArray {
		r.errs.add(v.ptr, "%s member %q must be an array of text, got %s", r.what, key, v.kind)
		return nil, nil
	}
	var out, ptrs []string
	for _, e := range v.arr {
		if e.kind != jString {
			r.errs.add(e.ptr, "want text, got %s", e.kind)
			continue
		}
		out = append(out, e.str)
		ptrs = append(ptrs, e.ptr)
	}
	return out, ptrs
}

// done reports members that were never read.
func (r *objReader) done() {
	if r == nil {
		return
	}
	var unknown []string
	for _, f := range r.n.obj {
		if !r.used[f.key] {
			unknown = append(unknown, f.key)
		}
	}
	sort.Strings(unknown)
	var known []string
	for k := range r.used {
		if k != "$comment" && k != "$kind" {
			known = append(known, k)
		}
	}
	sort.Strings(known)
	for _, k := range unknown {
		r.errs.add(childPtr(r.n.ptr, k), "unknown member %q of %s (known: %v)", k, r.what, known)
	}
}
