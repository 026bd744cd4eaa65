package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/tools"
)

// Argument schemas shared by the tools.
const (
	workspaceProp = `"workspace": {"type": "string", "pattern": "^[A-Za-z0-9._~-]{1,255}$", "description": "The workspace to use (default \"default\")."}`
	versionProp   = `"version": {"type": "integer", "minimum": 0, "description": "The version to read (default: the newest). Version 0 is the empty workspace."}`
)

// schemaObject returns an object schema (input or output) built from
// property fragments, compact with sorted keys. It is built on its first
// call, not at package init: the twelve round trips through encoding/json
// cost every start of the demiurge binary ~0.3 ms, `demiurge sh -c true`
// included, which never shows a workspace tool's schema.
func schemaObject(required []string, props ...string) func() json.RawMessage {
	return sync.OnceValue(func() json.RawMessage {
		req := ""
		if len(required) > 0 {
			b, _ := json.Marshal(required)
			req = `, "required": ` + string(b)
		}
		s := `{"type": "object", "properties": {` + strings.Join(props, ", ") + `}` + req + `, "additionalProperties": false}`
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			panic(fmt.Sprintf("workspace: schema %s: %v", s, err)) // programmer error
		}
		out, _ := json.Marshal(v)
		return out
	})
}

// schemaText returns a schema written out in full, for a spec's input or
// output.
func schemaText(s string) func() json.RawMessage {
	return func() json.RawMessage { return json.RawMessage(s) }
}

// Output schemas.
const (
	entryOut = `{"type": "object", "properties": {"path": {"type": "string"}, "kind": {"enum": ["file", "dir"]}, "size": {"type": "integer", "minimum": 0}}, "required": ["path", "kind", "size"], "additionalProperties": false}`
	wsOut    = `"workspace": {"type": "string"}, "version": {"type": "integer", "minimum": 0}`
)

var specs = []*spec{listSpec, readSpec, writeSpec, editSpec, removeSpec, diffSpec}

// ---- workspace_list ----

// defaultListEntries is the page size of workspace_list without a limit.
const defaultListEntries = 200

var listSpec = &spec{
	name:  ToolList,
	short: "List the files and directories of a workspace",
	desc: "List a directory of a versioned workspace: its entries (path, kind file or dir, size in bytes; a directory's size is the total of the files under it), " +
		"or with recursive every entry under it. Output is JSON; when next_cursor is set, call again with cursor to get the next page.",
	prompt:   `workspace_list: list a workspace directory. Input {"path"?: "dir", "recursive"?: bool, "cursor"?, "limit"?, "workspace"?, "version"?}. Output JSON {"workspace","version","path","entries":[{"path","kind","size"}],"next_cursor"?}.`,
	synopsis: `{"path": "src", "recursive": false, "limit": 200, "cursor": "...", "workspace": "default", "version": 3}  (all optional)`,
	input: schemaObject(nil, workspaceProp,
		`"path": {"type": "string", "maxLength": 4096, "description": "The directory to list, relative to the workspace root (default: the root). A file lists itself."}`,
		`"recursive": {"type": "boolean", "description": "List every entry under the directory, not only its own entries (default false)."}`,
		`"cursor": {"type": "string", "maxLength": 4096, "description": "The next_cursor of the previous page, to continue a listing."}`,
		`"limit": {"type": "integer", "minimum": 1, "maximum": 1000, "description": "At most this many entries (default 200)."}`,
		versionProp),
	output: schemaObject([]string{"workspace", "version", "path", "entries"}, wsOut, `"path": {"type": "string"}`,
		`"entries": {"type": "array", "items": `+entryOut+`}`, `"next_cursor": {"type": "string"}`),
	inputs: []string{
		"path        directory to list, relative to the root (default: the root)",
		"recursive   list the whole subtree",
		"cursor      next_cursor of the previous page",
		"limit       entries per page, 1 to 1000 (default 200)",
		"workspace   the workspace (default \"default\"); version  the version (default newest)",
	},
	outputs: []string{
		`{"workspace": "default", "version": 3, "path": "src",`,
		` "entries": [{"path": "src/main.go", "kind": "file", "size": 120}, ...],`,
		` "next_cursor": "src/util"}    (next_cursor only when more entries follow)`,
		"Entries come directories first before their contents, names in byte order.",
	},
	examples: []string{`{"path": "src", "recursive": true}`, `{}    (the root)`},
	run:      runList,
}

type listEntry struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	Size uint64 `json:"size"`
}

type listOutput struct {
	Workspace  string      `json:"workspace"`
	Version    uint64      `json:"version"`
	Path       string      `json:"path"`
	Entries    []listEntry `json:"entries"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

func runList(c *call) tools.Response {
	p, bad := c.path("path")
	if bad != nil {
		return *bad
	}
	limit, ok, err := c.args.uint("limit")
	if err != nil {
		return fail(c.name, ErrorInvalidArguments, exitUsage, "%v", err)
	}
	if !ok {
		limit = defaultListEntries
	}
	v, root, bad := c.version()
	if bad != nil {
		return *bad
	}
	res, err := List(c.ctx, c.svc.Store(), root, ListOptions{Path: p, Recursive: c.args.boolean("recursive"),
		Cursor: c.args.str("cursor", ""), Limit: int(min(limit, MaxListEntries))})
	if err != nil {
		return c.fromErr(err, p, v)
	}
	out := listOutput{Workspace: c.workspace, Version: v, Path: p, Entries: make([]listEntry, len(res.Entries)), NextCursor: res.NextCursor}
	for i, e := range res.Entries {
		out.Entries[i] = listEntry{Path: e.Path, Kind: e.Kind, Size: e.Size}
	}
	return c.ok(out)
}

// ---- workspace_read ----

var readSpec = &spec{
	name:  ToolRead,
	short: "Read a file of a workspace",
	desc: fmt.Sprintf("Read a text file of a versioned workspace, or a byte range of it (offset, length). Output is the file's text, at most %d bytes: "+
		"a longer file is cut at a character boundary with a note saying its size and the offset to read on from.", MaxReadBytes),
	prompt:   fmt.Sprintf(`workspace_read: read a workspace file. Input {"path": "file", "offset"?: bytes, "length"?: bytes, "workspace"?, "version"?}. Output the file's text (at most %d bytes; a note at the end says where to read on).`, MaxReadBytes),
	synopsis: `{"path": "src/main.go", "offset": 0, "length": 50000, "workspace": "default", "version": 3}  (path required)`,
	input: schemaObject([]string{"path"}, workspaceProp,
		`"path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "The file to read, relative to the workspace root."}`,
		`"offset": {"type": "integer", "minimum": 0, "description": "Start reading at this byte (default 0)."}`,
		`"length": {"type": "integer", "minimum": 0, "description": "Read at most this many bytes (default: to the end)."}`,
		versionProp),
	output: schemaText(`{"type":"string","description":"The file's text; when cut, followed by a note in square brackets."}`),
	inputs: []string{
		"path        the file, relative to the workspace root (required)",
		"offset      first byte to read (default 0); moved forward to a character boundary",
		"length      bytes to read (default: to the end of the file)",
		"workspace   the workspace (default \"default\"); version  the version (default newest)",
	},
	outputs: []string{
		fmt.Sprintf("The text read. More than %d bytes is cut at a character boundary and", MaxReadBytes),
		"followed by a note: [workspace_read: output cut ... call workspace_read with",
		"offset N to read on]. Bytes that are not UTF-8 are shown as U+FFFD (a note on stderr says so).",
	},
	examples: []string{`{"path": "README.md"}`, `{"path": "big.log", "offset": 50000}`},
	run:      runRead,
}

func runRead(c *call) tools.Response {
	p, bad := c.path("path")
	if bad != nil {
		return *bad
	}
	offset, _, err := c.args.uint("offset")
	if err != nil {
		return fail(c.name, ErrorInvalidArguments, exitUsage, "%v", err)
	}
	length, hasLength, err := c.args.uint("length")
	if err != nil {
		return fail(c.name, ErrorInvalidArguments, exitUsage, "%v", err)
	}
	v, root, bad := c.version()
	if bad != nil {
		return *bad
	}
	data, _, err := ReadBytes(c.ctx, c.svc.Store(), root, p, nil)
	if err != nil {
		return c.fromErr(err, p, v)
	}
	size := uint64(len(data))
	if offset > size {
		return fail(c.name, ErrorInvalidArguments, exitUsage, "offset %d is past the end of %s, which is %d bytes long in %s. Use an offset from 0 to %d", offset, p, size, c.where(v), size)
	}
	start, end := int(offset), len(data)
	if hasLength && length < size-offset {
		end = start + int(length)
	}
	var notes []string
	if s := startUTF8(data, start); s != start && s <= end {
		notes = append(notes, fmt.Sprintf("offset %d is inside a character; reading from byte %d", start, s))
		start = s
	}
	if end < len(data) {
		for k := 0; k < utf8.UTFMax-1 && end > start && !utf8.RuneStart(data[end]); k++ {
			end--
		}
	}
	cut := false
	if end-start > MaxReadBytes {
		end = start + len(cutUTF8(data[start:end], MaxReadBytes))
		cut = true
	}
	text := data[start:end]
	if !utf8.Valid(text) {
		text = bytes.ToValidUTF8(text, []byte("\uFFFD"))
		notes = append(notes, fmt.Sprintf("%s is not UTF-8 text; bytes that are not UTF-8 are shown as U+FFFD", p))
	}
	if size == 0 {
		notes = append(notes, fmt.Sprintf("%s is empty (0 bytes)", p))
	}
	resp := tools.Response{Stdout: string(text), ExitCode: exitOK}
	if cut {
		resp.Stdout += fmt.Sprintf("\n\n[workspace_read: output cut at %d bytes: showed bytes %d to %d of %s, which is %d bytes; call workspace_read with offset %d to read on]",
			MaxReadBytes, start, end, p, size, end)
		resp.StdoutTruncated = true
	}
	if len(notes) > 0 {
		resp.Stderr = c.name + ": " + strings.Join(notes, "; ")
	}
	return resp
}

// ---- workspace_write ----

var writeSpec = &spec{
	name:  ToolWrite,
	short: "Write a file of a workspace",
	desc: "Write a file of a versioned workspace with the given text, replacing it if it exists and creating missing parent directories. " +
		"Each write that changes something makes a new version of the workspace. Output is JSON.",
	prompt:   `workspace_write: write a whole workspace file (creates parent directories). Input {"path": "file", "content": "text", "executable"?: bool, "workspace"?}. Output JSON {"workspace","version","path","bytes","changed"}.`,
	synopsis: `{"path": "src/main.go", "content": "package main\n", "executable": false, "workspace": "default"}  (path and content required)`,
	input: schemaObject([]string{"path", "content"}, workspaceProp,
		`"path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "The file to write, relative to the workspace root."}`,
		fmt.Sprintf(`"content": {"type": "string", "maxLength": %d, "description": "The file's new contents."}`, MaxWriteBytes),
		`"executable": {"type": "boolean", "description": "Make the file executable (mode 755) or not (644); default: keep the file's mode, 644 for a new file."}`),
	output: schemaObject([]string{"workspace", "version", "path", "bytes", "changed"}, wsOut, `"path": {"type": "string"}`,
		`"bytes": {"type": "integer", "minimum": 0}`, `"changed": {"type": "boolean"}`),
	inputs: []string{
		"path        the file, relative to the workspace root (required)",
		"content     the whole new contents (required)",
		"executable  mode 755 (true) or 644 (false); default: keep the mode",
		"workspace   the workspace (default \"default\")",
	},
	outputs: []string{
		`{"workspace": "default", "version": 4, "path": "src/main.go", "bytes": 13, "changed": true}`,
		"version is the workspace's version after the write; changed is false when the",
		"file already had this content and mode (no new version).",
	},
	examples: []string{`{"path": "notes/todo.md", "content": "- write tests\n"}`},
	run:      runWrite,
}

type writeOutput struct {
	Workspace string `json:"workspace"`
	Version   uint64 `json:"version"`
	Path      string `json:"path"`
	Bytes     int    `json:"bytes"`
	Changed   bool   `json:"changed"`
}

func runWrite(c *call) tools.Response {
	p, bad := c.path("path")
	if bad != nil {
		return *bad
	}
	content := c.args.str("content", "")
	if len(content) > MaxWriteBytes {
		return fail(c.name, ErrorTooLarge, exitFailed, "content is %d bytes; the limit is %d. Write the file in smaller files", len(content), MaxWriteBytes)
	}
	var mode uint64
	if c.args.has("executable") {
		mode = ModeFile
		if c.args.boolean("executable") {
			mode = ModeExec
		}
	}
	h, changed, err := c.update(func(ctx context.Context, root cas.Ref) (cas.Ref, error) {
		nr, _, err := WriteBytes(ctx, c.svc.Store(), root, p, []byte(content), mode)
		return nr, err
	})
	if err != nil {
		return c.fromErr(err, p, h.Version)
	}
	return c.ok(writeOutput{Workspace: c.workspace, Version: h.Version, Path: p, Bytes: len(content), Changed: changed})
}

// ---- workspace_edit ----

var editSpec = &spec{
	name:  ToolEdit,
	short: "Replace text in a file of a workspace",
	desc: "Replace the one occurrence of old_string in a file of a versioned workspace with new_string. " +
		"If old_string does not occur, or occurs more than once, nothing changes and the error says how often and on which lines; " +
		"include more surrounding text to make it unique, or set replace_all to replace every occurrence. Each edit makes a new version. Output is JSON.",
	prompt:   `workspace_edit: replace text in a workspace file. Input {"path": "file", "old_string": "exact text, unique in the file", "new_string": "replacement", "replace_all"?: bool, "workspace"?}. Output JSON {"workspace","version","path","replacements"}.`,
	synopsis: `{"path": "src/main.go", "old_string": "fmt.Println(1)", "new_string": "fmt.Println(2)", "replace_all": false, "workspace": "default"}  (path, old_string, new_string required)`,
	input: schemaObject([]string{"path", "old_string", "new_string"}, workspaceProp,
		`"path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "The file to edit, relative to the workspace root."}`,
		`"old_string": {"type": "string", "minLength": 1, "description": "The exact text to replace, including whitespace; it must occur exactly once unless replace_all is true."}`,
		`"new_string": {"type": "string", "description": "The text to put in its place (may be empty, to delete old_string)."}`,
		`"replace_all": {"type": "boolean", "description": "Replace every occurrence of old_string (default false)."}`),
	output: schemaObject([]string{"workspace", "version", "path", "replacements"}, wsOut, `"path": {"type": "string"}`,
		`"replacements": {"type": "integer", "minimum": 1}`),
	inputs: []string{
		"path         the file, relative to the workspace root (required)",
		"old_string   the exact text to replace (required, not empty)",
		"new_string   its replacement (required, may be empty)",
		"replace_all  replace every occurrence instead of exactly one",
		"workspace    the workspace (default \"default\")",
	},
	outputs: []string{
		`{"workspace": "default", "version": 5, "path": "src/main.go", "replacements": 1}`,
		"Errors no_match and ambiguous_match (with the line numbers of the first matches) change nothing.",
	},
	examples: []string{`{"path": "go.mod", "old_string": "go 1.25", "new_string": "go 1.26"}`},
	run:      runEdit,
}

type editOutput struct {
	Workspace    string `json:"workspace"`
	Version      uint64 `json:"version"`
	Path         string `json:"path"`
	Replacements int    `json:"replacements"`
}

func runEdit(c *call) tools.Response {
	p, bad := c.path("path")
	if bad != nil {
		return *bad
	}
	old, repl := c.args.str("old_string", ""), c.args.str("new_string", "")
	n := 0
	var tooLarge int
	h, _, err := c.update(func(ctx context.Context, root cas.Ref) (cas.Ref, error) {
		data, e, err := ReadBytes(ctx, c.svc.Store(), root, p, nil)
		if err != nil {
			return cas.Ref{}, err
		}
		out, k, err := Edit(data, old, repl, c.args.boolean("replace_all"))
		if err != nil {
			return cas.Ref{}, err
		}
		if len(out) > MaxWriteBytes {
			tooLarge = len(out)
			return root, nil
		}
		n = k
		nr, _, err := WriteBytes(ctx, c.svc.Store(), root, p, out, e.Mode)
		return nr, err
	})
	if err != nil {
		return c.fromErr(err, p, h.Version)
	}
	if tooLarge > 0 {
		return fail(c.name, ErrorTooLarge, exitFailed, "the edited %s would be %d bytes; the limit is %d. Nothing was changed", p, tooLarge, MaxWriteBytes)
	}
	return c.ok(editOutput{Workspace: c.workspace, Version: h.Version, Path: p, Replacements: n})
}

// ---- workspace_remove ----

var removeSpec = &spec{
	name:  ToolRemove,
	short: "Remove a file or directory of a workspace",
	desc: "Remove a file, or a directory, of a versioned workspace. A directory that holds entries is removed only with recursive set to true. " +
		"Each removal makes a new version of the workspace. Output is JSON.",
	prompt:   `workspace_remove: remove a workspace file or directory. Input {"path": "file or dir", "recursive"?: bool (needed for a non-empty directory), "workspace"?}. Output JSON {"workspace","version","path","kind"}.`,
	synopsis: `{"path": "build", "recursive": true, "workspace": "default"}  (path required)`,
	input: schemaObject([]string{"path"}, workspaceProp,
		`"path": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "The file or directory to remove, relative to the workspace root."}`,
		`"recursive": {"type": "boolean", "description": "Remove a directory with everything under it (default false: only files and empty directories)."}`),
	output: schemaObject([]string{"workspace", "version", "path", "kind"}, wsOut, `"path": {"type": "string"}`, `"kind": {"enum": ["file", "dir"]}`),
	inputs: []string{
		"path        the file or directory, relative to the workspace root (required)",
		"recursive   also remove a directory that is not empty",
		"workspace   the workspace (default \"default\")",
	},
	outputs:  []string{`{"workspace": "default", "version": 6, "path": "build", "kind": "dir"}`},
	examples: []string{`{"path": "tmp/scratch.txt"}`, `{"path": "build", "recursive": true}`},
	run:      runRemove,
}

type removeOutput struct {
	Workspace string `json:"workspace"`
	Version   uint64 `json:"version"`
	Path      string `json:"path"`
	Kind      string `json:"kind"`
}

func runRemove(c *call) tools.Response {
	p, bad := c.path("path")
	if bad != nil {
		return *bad
	}
	if p == "" {
		return fail(c.name, ErrorInvalidPath, exitUsage, "the root of a workspace cannot be removed. Remove its entries one by one")
	}
	var removed Entry
	h, _, err := c.update(func(ctx context.Context, root cas.Ref) (cas.Ref, error) {
		nr, e, err := Remove(ctx, c.svc.Store(), root, p, c.args.boolean("recursive"))
		removed = e
		return nr, err
	})
	if err != nil {
		return c.fromErr(err, p, h.Version)
	}
	return c.ok(removeOutput{Workspace: c.workspace, Version: h.Version, Path: p, Kind: removed.Kind})
}

// ---- workspace_diff ----

var diffSpec = &spec{
	name:  ToolDiff,
	short: "Compare two versions of a workspace",
	desc: "List what changed between two versions of a workspace: every path added, removed or changed (a directory added or removed is listed with each entry under it). " +
		"By default compares the newest version with the one before it. Output is JSON.",
	prompt:   `workspace_diff: list changed paths between two workspace versions. Input {"from_version"?: n (default to_version-1), "to_version"?: n (default newest), "prefix"?: "dir", "workspace"?}. Output JSON {"workspace","from_version","to_version","changes":[{"path","change":"added|removed|changed","kind"}]}.`,
	synopsis: `{"from_version": 2, "to_version": 5, "prefix": "src", "workspace": "default"}  (all optional)`,
	input: schemaObject(nil, workspaceProp,
		`"from_version": {"type": "integer", "minimum": 0, "description": "The older version (default: to_version - 1). Version 0 is the empty workspace."}`,
		`"to_version": {"type": "integer", "minimum": 0, "description": "The newer version (default: the newest)."}`,
		`"prefix": {"type": "string", "maxLength": 4096, "description": "Only changes at or under this path."}`),
	output: schemaObject([]string{"workspace", "from_version", "to_version", "changes"}, `"workspace": {"type": "string"}`,
		`"from_version": {"type": "integer", "minimum": 0}`, `"to_version": {"type": "integer", "minimum": 0}`,
		`"prefix": {"type": "string"}`,
		`"changes": {"type": "array", "items": {"type": "object", "properties": {"path": {"type": "string"}, "change": {"enum": ["added", "removed", "changed"]}, "kind": {"enum": ["file", "dir"]}}, "required": ["path", "change", "kind"], "additionalProperties": false}}`,
		`"truncated": {"type": "boolean"}`, `"total_changes": {"type": "integer", "minimum": 0}`),
	inputs: []string{
		"from_version  the older version (default: to_version - 1; 0 is the empty workspace)",
		"to_version    the newer version (default: the newest)",
		"prefix        only changes at or under this path",
		"workspace     the workspace (default \"default\")",
	},
	outputs: []string{
		`{"workspace": "default", "from_version": 4, "to_version": 5,`,
		` "changes": [{"path": "src/main.go", "change": "changed", "kind": "file"}]}`,
		fmt.Sprintf("At most %d changes; then truncated is true and total_changes counts them all.", MaxDiffChanges),
	},
	examples: []string{`{}    (the last change)`, `{"from_version": 0, "prefix": "src"}`},
	run:      runDiff,
}

type diffChange struct {
	Path   string `json:"path"`
	Change string `json:"change"`
	Kind   string `json:"kind"`
}

type diffOutput struct {
	Workspace    string       `json:"workspace"`
	FromVersion  uint64       `json:"from_version"`
	ToVersion    uint64       `json:"to_version"`
	Prefix       string       `json:"prefix,omitempty"`
	Changes      []diffChange `json:"changes"`
	Truncated    bool         `json:"truncated,omitempty"`
	TotalChanges int          `json:"total_changes,omitempty"`
}

func runDiff(c *call) tools.Response {
	prefix, bad := c.path("prefix")
	if bad != nil {
		return *bad
	}
	from, hasFrom, err := c.args.uint("from_version")
	if err != nil {
		return fail(c.name, ErrorInvalidArguments, exitUsage, "%v", err)
	}
	to, hasTo, err := c.args.uint("to_version")
	if err != nil {
		return fail(c.name, ErrorInvalidArguments, exitUsage, "%v", err)
	}
	var toRoot cas.Ref
	if hasTo {
		if toRoot, err = c.root(to); err != nil {
			return c.fromErr(err, prefix, to)
		}
	} else {
		h, err := c.head()
		if err != nil {
			return c.fromErr(err, prefix, 0)
		}
		to, toRoot = h.Version, h.Root
	}
	if !hasFrom && to > 0 {
		from = to - 1
	}
	fromRoot, err := c.root(from)
	if err != nil {
		return c.fromErr(err, prefix, from)
	}
	changes, err := Diff(c.ctx, c.svc.Store(), fromRoot, toRoot, prefix)
	if err != nil {
		return c.fromErr(err, prefix, to)
	}
	out := diffOutput{Workspace: c.workspace, FromVersion: from, ToVersion: to, Prefix: prefix, Changes: []diffChange{}}
	for i, ch := range changes {
		if i == MaxDiffChanges {
			out.Truncated, out.TotalChanges = true, len(changes)
			break
		}
		out.Changes = append(out.Changes, diffChange{Path: ch.Path, Change: ch.Change, Kind: ch.Kind})
	}
	return c.ok(out)
}
