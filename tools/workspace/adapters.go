package workspace

import (
	"context"
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/effects"
	"github.com/demiurge-dev/demiurge/schema"
)

// EffectCall is the kind of the effect through which the model's
// workspace tools run (params {tool, arguments_json}, a sys/ToolResponse@1
// receipt; see adapters/toolcall).
const EffectCall = "workspace.call"

// AdapterID is the adapter_id of the workspace.* receipts.
const AdapterID = "workspace"

// Adapters returns the adapters of the AgentOS workspace primitives for AIR
// plans, by effect kind: workspace.resolve (from svc: the world's versions
// and svc's own commits), workspace.empty_root, workspace.list,
// workspace.read_ref, workspace.read_bytes, workspace.write_bytes,
// workspace.remove and workspace.diff (on the trees in the call's CAS).
// Their receipts fit the built-in receipt schemas. workspace.annotations_get
// and workspace.annotations_set are not implemented.
//
// Differences from AgentOS to know: workspace.remove removes a directory
// with everything under it; workspace.diff reports a change's kind as
// "added", "removed" or "changed", a directory added or removed together
// with every entry under it; workspace.list scope is "dir" (the default)
// or "subtree".
func Adapters(svc *Service) map[string]effects.Adapter {
	return map[string]effects.Adapter{
		"workspace.resolve":     effects.AdapterFunc(svc.resolve),
		"workspace.empty_root":  effects.AdapterFunc(emptyRoot),
		"workspace.list":        effects.AdapterFunc(listEffect),
		"workspace.read_ref":    effects.AdapterFunc(readRef),
		"workspace.read_bytes":  effects.AdapterFunc(readBytes),
		"workspace.write_bytes": effects.AdapterFunc(writeBytes),
		"workspace.remove":      effects.AdapterFunc(remove),
		"workspace.diff":        effects.AdapterFunc(diff),
	}
}

func param(c *effects.Call, name string) schema.Value {
	m, _ := c.Params.(*schema.Map)
	v, _ := m.Get(name)
	return v
}

func textParam(c *effects.Call, name string) (string, bool) {
	s, ok := param(c, name).(string)
	return s, ok
}

func refParam(c *effects.Call, name string) (cas.Ref, error) {
	s, _ := textParam(c, name)
	r, err := cas.ParseRef(s)
	if err != nil {
		return cas.Ref{}, fmt.Errorf("%s: %w", name, err)
	}
	return r, nil
}

func errReceipt(kind string, err error) effects.Receipt {
	return effects.Errorf(AdapterID, "%s: %v", kind, err)
}

func (s *Service) resolve(ctx context.Context, c *effects.Call) effects.Receipt {
	const kind = "workspace.resolve"
	ws, _ := textParam(c, "workspace")
	h, err := s.Head(ctx, ws)
	if err != nil {
		return errReceipt(kind, err)
	}
	none := schema.Record("exists", false, "resolved_version", nil, "head", nil, "root_hash", nil)
	if h.Version == 0 {
		return effects.OK(AdapterID, none)
	}
	v, root := h.Version, h.Root
	if want, ok := param(c, "version").(uint64); ok {
		r, err := s.Root(ctx, ws, want)
		switch {
		case errors.Is(err, ErrUnknownVersion):
			return effects.OK(AdapterID, schema.Record("exists", true, "resolved_version", nil, "head", h.Version, "root_hash", nil))
		case err != nil:
			return errReceipt(kind, err)
		}
		v, root = want, r
	}
	return effects.OK(AdapterID, schema.Record("exists", true, "resolved_version", v, "head", h.Version, "root_hash", root.String()))
}

func emptyRoot(ctx context.Context, c *effects.Call) effects.Receipt {
	ref, err := EmptyRoot(ctx, c.CAS)
	if err != nil {
		return errReceipt("workspace.empty_root", err)
	}
	return effects.OK(AdapterID, schema.Record("root_hash", ref.String()))
}

func listEffect(ctx context.Context, c *effects.Call) effects.Receipt {
	const kind = "workspace.list"
	root, err := refParam(c, "root_hash")
	if err != nil {
		return errReceipt(kind, err)
	}
	opts := ListOptions{}
	opts.Path, _ = textParam(c, "path")
	opts.Cursor, _ = textParam(c, "cursor")
	switch scope, _ := textParam(c, "scope"); scope {
	case "", "dir":
	case "subtree":
		opts.Recursive = true
	default:
		return errReceipt(kind, fmt.Errorf("scope %q is not \"dir\" or \"subtree\"", scope))
	}
	limit, _ := param(c, "limit").(uint64)
	opts.Limit = int(min(limit, MaxListLimit))
	res, err := List(ctx, c.CAS, root, opts)
	if err != nil {
		return errReceipt(kind, err)
	}
	entries := make([]schema.Value, len(res.Entries))
	for i, e := range res.Entries {
		entries[i] = schema.Record("path", e.Path, "kind", e.Kind, "hash", e.Hash.String(), "size", e.Size, "mode", e.Mode)
	}
	var next schema.Value
	if res.NextCursor != "" {
		next = res.NextCursor
	}
	return effects.OK(AdapterID, schema.Record("entries", entries, "next_cursor", next))
}

func readRef(ctx context.Context, c *effects.Call) effects.Receipt {
	const kind = "workspace.read_ref"
	root, err := refParam(c, "root_hash")
	if err != nil {
		return errReceipt(kind, err)
	}
	p, _ := textParam(c, "path")
	e, err := ReadRef(ctx, c.CAS, root, p)
	switch {
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrNotDir):
		return effects.OK(AdapterID, nil)
	case err != nil:
		return errReceipt(kind, err)
	}
	return effects.OK(AdapterID, schema.Record("kind", e.Kind, "hash", e.Hash.String(), "size", e.Size, "mode", e.Mode))
}

func readBytes(ctx context.Context, c *effects.Call) effects.Receipt {
	const kind = "workspace.read_bytes"
	root, err := refParam(c, "root_hash")
	if err != nil {
		return errReceipt(kind, err)
	}
	p, _ := textParam(c, "path")
	var r *Range
	if rm, ok := param(c, "range").(*schema.Map); ok {
		s, _ := rm.Get("start")
		e, _ := rm.Get("end")
		start, _ := s.(uint64)
		end, _ := e.(uint64)
		r = &Range{Start: start, End: end}
	}
	data, _, err := ReadBytes(ctx, c.CAS, root, p, r)
	if err != nil {
		return errReceipt(kind, err)
	}
	return effects.OK(AdapterID, data)
}

func writeBytes(ctx context.Context, c *effects.Call) effects.Receipt {
	const kind = "workspace.write_bytes"
	root, err := refParam(c, "root_hash")
	if err != nil {
		return errReceipt(kind, err)
	}
	p, _ := textParam(c, "path")
	data, _ := param(c, "bytes").([]byte)
	mode, _ := param(c, "mode").(uint64)
	nr, blob, err := WriteBytes(ctx, c.CAS, root, p, data, mode)
	if err != nil {
		return errReceipt(kind, err)
	}
	return effects.OK(AdapterID, schema.Record("new_root_hash", nr.String(), "blob_hash", blob.String()))
}

func remove(ctx context.Context, c *effects.Call) effects.Receipt {
	const kind = "workspace.remove"
	root, err := refParam(c, "root_hash")
	if err != nil {
		return errReceipt(kind, err)
	}
	p, _ := textParam(c, "path")
	nr, _, err := Remove(ctx, c.CAS, root, p, true)
	if err != nil {
		return errReceipt(kind, err)
	}
	return effects.OK(AdapterID, schema.Record("new_root_hash", nr.String()))
}

func diff(ctx context.Context, c *effects.Call) effects.Receipt {
	const kind = "workspace.diff"
	a, err := refParam(c, "root_a")
	if err != nil {
		return errReceipt(kind, err)
	}
	b, err := refParam(c, "root_b")
	if err != nil {
		return errReceipt(kind, err)
	}
	prefix, _ := textParam(c, "prefix")
	changes, err := Diff(ctx, c.CAS, a, b, prefix)
	if err != nil {
		return errReceipt(kind, err)
	}
	out := make([]schema.Value, len(changes))
	for i, ch := range changes {
		out[i] = schema.Record("path", ch.Path, "kind", ch.Change, "old_hash", optRef(ch.OldHash), "new_hash", optRef(ch.NewHash))
	}
	return effects.OK(AdapterID, schema.Record("changes", out))
}
