package workspace

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/jsonschema"
	"github.com/demiurge-dev/demiurge/tools"
)

// toolEnv runs workspace tools whose commits a fake world records at once,
// as the world does once the receipt comes back.
type toolEnv struct {
	t     *testing.T
	w     *fakeWorld
	svc   *Service
	tools map[string]tools.Tool
}

func newToolEnv(t *testing.T) *toolEnv {
	w := newFakeWorld()
	svc := NewService(cas.NewMemory(), CellHeads(w.state), nil)
	e := &toolEnv{t: t, w: w, svc: svc, tools: map[string]tools.Tool{}}
	for _, tl := range Tools(svc) {
		e.tools[tl.Info().Name] = tl
	}
	return e
}

func (e *toolEnv) run(name, args string) tools.Response {
	e.t.Helper()
	rec := &tools.Recorder{}
	resp := e.tools[name].Run(tools.WithRecorder(e.t.Context(), rec), tools.Request{Arguments: json.RawMessage(args)}, nil)
	for _, c := range rec.Commits() {
		if err := e.w.record(c); err != nil {
			e.t.Fatalf("%s %s: the world refused its commit: %v", name, args, err)
		}
	}
	if resp.ExitCode == 0 && (resp.Error != "" || resp.Stdout == "" && name != ToolRead) {
		e.t.Fatalf("%s %s: exit 0 with %+v", name, args, resp)
	}
	if resp.ExitCode != 0 && (resp.Error == "" || resp.Stderr == "" || resp.Stdout != "") {
		e.t.Fatalf("%s %s: exit %d with %+v", name, args, resp.ExitCode, resp)
	}
	return resp
}

// TestToolsScenario runs the tools one after another on one workspace and
// checks each output exactly: JSON for listings, writes and diffs, the text
// for reads, the message for errors.
func TestToolsScenario(t *testing.T) {
	e := newToolEnv(t)
	for _, tc := range []struct {
		tool, args string
		exit       int
		category   string
		out        string // stdout, or stderr for errors
	}{
		{ToolList, `{}`, 0, "", `{"workspace":"default","version":0,"path":"","entries":[]}`},
		{ToolRead, `{"path": "a.txt"}`, 1, ErrorNotFound, `workspace_read: a.txt not found in workspace "default" (version 0). Use workspace_list to see what exists`},
		{ToolWrite, `{"path": "a.txt", "content": "hello\nworld\n"}`, 0, "", `{"workspace":"default","version":1,"path":"a.txt","bytes":12,"changed":true}`},
		{ToolWrite, `{"path": "src/main.go", "content": "package main\n", "executable": true}`, 0, "", `{"workspace":"default","version":2,"path":"src/main.go","bytes":13,"changed":true}`},
		{ToolWrite, `{"path": "a.txt", "content": "hello\nworld\n"}`, 0, "", `{"workspace":"default","version":2,"path":"a.txt","bytes":12,"changed":false}`},
		{ToolRead, `{"path": "a.txt"}`, 0, "", "hello\nworld\n"},
		{ToolRead, `{"path": "a.txt", "offset": 6, "length": 3}`, 0, "", "wor"},
		{ToolRead, `{"path": "./a.txt", "version": 1}`, 0, "", "hello\nworld\n"},
		{ToolRead, `{"path": "src/main.go", "version": 1}`, 1, ErrorNotFound, `workspace_read: src/main.go not found in workspace "default" (version 1): src does not exist. Use workspace_list to see what exists`},
		{ToolList, `{"recursive": true}`, 0, "", `{"workspace":"default","version":2,"path":"","entries":[{"path":"a.txt","kind":"file","size":12},{"path":"src","kind":"dir","size":13},{"path":"src/main.go","kind":"file","size":13}]}`},
		{ToolList, `{"limit": 1}`, 0, "", `{"workspace":"default","version":2,"path":"","entries":[{"path":"a.txt","kind":"file","size":12}],"next_cursor":"a.txt"}`},
		{ToolList, `{"limit": 1, "cursor": "a.txt"}`, 0, "", `{"workspace":"default","version":2,"path":"","entries":[{"path":"src","kind":"dir","size":13}]}`},
		{ToolEdit, `{"path": "a.txt", "old_string": "world", "new_string": "there"}`, 0, "", `{"workspace":"default","version":3,"path":"a.txt","replacements":1}`},
		{ToolRead, `{"path": "a.txt"}`, 0, "", "hello\nthere\n"},
		{ToolEdit, `{"path": "a.txt", "old_string": "nope", "new_string": "x"}`, 1, ErrorNoMatch, `workspace_edit: old_string not found in a.txt in workspace "default" (version 3). Read the file with workspace_read and copy the exact text to replace, including whitespace and line breaks`},
		{ToolEdit, `{"path": "a.txt", "old_string": "e", "new_string": "E"}`, 1, ErrorAmbiguousMatch, `workspace_edit: old_string occurs 3 times (lines 1, 2, 2) in a.txt in workspace "default" (version 3). Include more of the surrounding text in old_string to make it unique, or set replace_all to true to replace every occurrence`},
		{ToolEdit, `{"path": "a.txt", "old_string": "e", "new_string": "E", "replace_all": true}`, 0, "", `{"workspace":"default","version":4,"path":"a.txt","replacements":3}`},
		{ToolDiff, `{}`, 0, "", `{"workspace":"default","from_version":3,"to_version":4,"changes":[{"path":"a.txt","change":"changed","kind":"file"}]}`},
		{ToolDiff, `{"from_version": 0, "to_version": 2}`, 0, "", `{"workspace":"default","from_version":0,"to_version":2,"changes":[{"path":"a.txt","change":"added","kind":"file"},{"path":"src","change":"added","kind":"dir"},{"path":"src/main.go","change":"added","kind":"file"}]}`},
		{ToolDiff, `{"from_version": 0, "prefix": "src"}`, 0, "", `{"workspace":"default","from_version":0,"to_version":4,"prefix":"src","changes":[{"path":"src","change":"added","kind":"dir"},{"path":"src/main.go","change":"added","kind":"file"}]}`},
		{ToolDiff, `{"to_version": 9}`, 1, ErrorNotFound, `workspace_diff: workspace "default" has no version 9 (its versions are 1 to 4). Leave out version for the newest one`},
		{ToolRemove, `{"path": "src"}`, 1, ErrorNotEmpty, `workspace_remove: src is a directory that is not empty in workspace "default" (version 4) (it holds 1 entries). Set recursive to true to remove it with everything under it`},
		{ToolRemove, `{"path": "src", "recursive": true}`, 0, "", `{"workspace":"default","version":5,"path":"src","kind":"dir"}`},
		{ToolRemove, `{"path": "src"}`, 1, ErrorNotFound, `workspace_remove: src not found in workspace "default" (version 5). Use workspace_list to see what exists`},
		{ToolRemove, `{"path": "."}`, 2, ErrorInvalidPath, `workspace_remove: the root of a workspace cannot be removed. Remove its entries one by one`},
		// Paths that escape.
		{ToolWrite, `{"path": "../etc/passwd", "content": "x"}`, 2, ErrorInvalidPath, `workspace_write: path "../etc/passwd": path "../etc/passwd" escapes the workspace with "..". Use a path relative to the workspace root, such as "src/main.go", without ".."`},
		{ToolRead, `{"path": "/etc/passwd"}`, 2, ErrorInvalidPath, `workspace_read: path "/etc/passwd": path "/etc/passwd" is absolute; workspace paths are relative to the workspace root. Use a path relative to the workspace root, such as "src/main.go", without ".."`},
		{ToolList, `{"path": "a\\b"}`, 2, ErrorInvalidPath, `workspace_list: path "a\\b": path "a\\b" holds a NUL or backslash. Use a path relative to the workspace root, such as "src/main.go", without ".."`},
		{ToolDiff, `{"prefix": "x/../../y"}`, 2, ErrorInvalidPath, `workspace_diff: prefix "x/../../y": path "x/../../y" escapes the workspace with "..". Use a path relative to the workspace root, such as "src/main.go", without ".."`},
		// Wrong kinds.
		{ToolRead, `{"path": "."}`, 1, ErrorIsDirectory, `workspace_read: the root is a directory in workspace "default" (version 5). Name a file, or use workspace_list to see the directory's entries`},
		{ToolWrite, `{"path": "a.txt/b", "content": ""}`, 1, ErrorNotDirectory, `workspace_write: a.txt/b in workspace "default" (version 5): a.txt is a file. A file cannot hold entries; name a directory or the file itself`},
		{ToolRead, `{"path": "a.txt", "offset": 100}`, 2, ErrorInvalidArguments, `workspace_read: offset 100 is past the end of a.txt, which is 12 bytes long in workspace "default" (version 5). Use an offset from 0 to 12`},
		// Arguments that do not fit the schema.
		{ToolWrite, `{"path": "x"}`, 2, ErrorInvalidArguments, `workspace_write: the arguments do not fit the input schema: at /: missing property 'content'. Synopsis: ` + writeSpec.synopsis},
		{ToolRead, `{"path": "a.txt", "colour": "red"}`, 2, ErrorInvalidArguments, `workspace_read: the arguments do not fit the input schema: at /: additional properties 'colour' not allowed. Synopsis: ` + readSpec.synopsis},
		{ToolList, `{"limit": 0}`, 2, ErrorInvalidArguments, `workspace_list: the arguments do not fit the input schema: at /limit: minimum: got 0, want 1. Synopsis: ` + listSpec.synopsis},
		{ToolList, `{"workspace": "no/slash"}`, 2, ErrorInvalidArguments, "workspace_list: the arguments do not fit the input schema: at /workspace: '" + `no/slash' does not match pattern '^[A-Za-z0-9._~-]{1,255}$'. Synopsis: ` + listSpec.synopsis},
		{ToolList, `[1, 2]`, 2, ErrorInvalidArguments, `workspace_list: the arguments do not fit the input schema: at /: got array, want object. Synopsis: ` + listSpec.synopsis},
		{ToolList, `{"path": `, 2, ErrorInvalidArguments, `workspace_list: the arguments are not JSON: unexpected EOF. Synopsis: ` + listSpec.synopsis},
		{ToolEdit, `{"path": "a.txt", "old_string": "x", "new_string": "x"}`, 2, ErrorInvalidArguments, `workspace_edit: old_string and new_string are the same, so the edit would change nothing. Give the new text in new_string`},
		// Another workspace.
		{ToolWrite, `{"workspace": "other", "path": "x", "content": "1"}`, 0, "", `{"workspace":"other","version":1,"path":"x","bytes":1,"changed":true}`},
		{ToolList, `{"workspace": "other"}`, 0, "", `{"workspace":"other","version":1,"path":"","entries":[{"path":"x","kind":"file","size":1}]}`},
	} {
		resp := e.run(tc.tool, tc.args)
		got := resp.Stdout
		if tc.exit != 0 {
			got = resp.Stderr
		}
		if resp.ExitCode != tc.exit || resp.Error != tc.category || got != tc.out {
			t.Errorf("%s %s:\n got exit %d %q: %s\nwant exit %d %q: %s", tc.tool, tc.args, resp.ExitCode, resp.Error, got, tc.exit, tc.category, tc.out)
		}
		if tc.exit == 0 && tc.tool != ToolRead {
			checkOutput(t, e.tools[tc.tool], resp.Stdout)
		}
	}
	if h := e.w.history(t, "default"); h.Latest != 5 {
		t.Errorf("the world recorded %d versions; want 5", h.Latest)
	}
}

// checkOutput validates a tool's JSON output against its OutputSchema.
func checkOutput(t *testing.T, tl tools.Tool, out string) {
	t.Helper()
	info := tl.Info()
	sch := compile(info.Name+"-out", info.OutputSchema)
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%s output is not JSON: %v\n%s", info.Name, err, out)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("%s output does not fit its OutputSchema: %v\n%s", info.Name, err, out)
	}
}

func TestReadCut(t *testing.T) {
	e := newToolEnv(t)
	// "é" is two bytes; the 50000th byte falls inside one.
	text := strings.Repeat("a", MaxReadBytes-1) + strings.Repeat("é", 100)
	args, _ := json.Marshal(map[string]string{"path": "big.txt", "content": text})
	e.run(ToolWrite, string(args))
	resp := e.run(ToolRead, `{"path": "big.txt"}`)
	body, note, ok := strings.Cut(resp.Stdout, "\n\n[workspace_read: ")
	if !ok || !resp.StdoutTruncated {
		t.Fatalf("no cut note: truncated %v, %d bytes", resp.StdoutTruncated, len(resp.Stdout))
	}
	if len(body) != MaxReadBytes-1 || !utf8.ValidString(body) {
		t.Fatalf("body is %d bytes (valid UTF-8 %v); want %d", len(body), utf8.ValidString(body), MaxReadBytes-1)
	}
	wantNote := fmt.Sprintf("output cut at 50000 bytes: showed bytes 0 to 49999 of big.txt, which is %d bytes; call workspace_read with offset 49999 to read on]", len(text))
	if note != wantNote {
		t.Fatalf("note %q; want %q", note, wantNote)
	}
	// Reading on from there gives the rest.
	rest := e.run(ToolRead, `{"path": "big.txt", "offset": 49999}`)
	if rest.Stdout != strings.Repeat("é", 100) || rest.StdoutTruncated {
		t.Fatalf("rest: %q", rest.Stdout)
	}
	// An offset inside a character moves to the next one.
	mid := e.run(ToolRead, `{"path": "big.txt", "offset": 50000, "length": 4}`)
	if mid.Stdout != "é" || !strings.Contains(mid.Stderr, "offset 50000 is inside a character; reading from byte 50001") {
		t.Fatalf("mid-character offset: %q, %q", mid.Stdout, mid.Stderr)
	}
}

func TestReadSpecialFiles(t *testing.T) {
	e := newToolEnv(t)
	ctx := t.Context()
	e.run(ToolWrite, `{"path": "empty", "content": ""}`)
	r := e.run(ToolRead, `{"path": "empty"}`)
	if r.Stdout != "" || r.Stderr != "workspace_read: empty is empty (0 bytes)" {
		t.Errorf("empty file: %+v", r)
	}
	// A binary file, written below the tools.
	if _, _, err := e.svc.Update(ctx, "default", func(ctx context.Context, root cas.Ref) (cas.Ref, error) {
		nr, _, err := WriteBytes(ctx, e.svc.Store(), root, "bin", []byte{'o', 'k', 0xff, 0xfe, '!'}, 0)
		return nr, err
	}); err != nil {
		t.Fatal(err)
	}
	r = e.run(ToolRead, `{"path": "bin"}`)
	if r.Stdout != "ok\uFFFD!" || !strings.Contains(r.Stderr, "bin is not UTF-8 text") {
		t.Errorf("binary file: %+v", r)
	}
}

func TestToolTimeout(t *testing.T) {
	e := newToolEnv(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	resp := e.tools[ToolWrite].Run(ctx, tools.Request{Arguments: []byte(`{"path": "x", "content": "y"}`)}, nil)
	if resp.ExitCode != exitCancelled || resp.Error != ErrorCancelled {
		t.Errorf("cancelled: %+v", resp)
	}
	dctx, dcancel := context.WithDeadline(t.Context(), time.Unix(1, 0))
	defer dcancel()
	resp = e.tools[ToolList].Run(dctx, tools.Request{Arguments: []byte(`{}`)}, nil)
	if resp.ExitCode != exitTimeout || resp.Error != ErrorTimeout {
		t.Errorf("deadline: %+v", resp)
	}
	if p := e.svc.Pending("default"); len(p) != 0 {
		t.Errorf("a cancelled write committed %v", p)
	}
}

func TestToolStatus(t *testing.T) {
	e := newToolEnv(t)
	var phases []string
	resp := e.tools[ToolWrite].Run(t.Context(), tools.Request{Arguments: []byte(`{"path": "x", "content": "y"}`)}, func(s tools.Status) {
		phases = append(phases, s.Phase+":"+s.Stream)
	})
	if resp.ExitCode != 0 || strings.Join(phases, " ") != "validate: execute: output:stdout complete:" {
		t.Errorf("phases %v, %+v", phases, resp)
	}
}

// TestToolContract checks what every tool says about itself: schemas are
// strict JSON Schemas, help is a man page, the prompt names the tool.
func TestToolContract(t *testing.T) {
	e := newToolEnv(t)
	var names []string
	for _, tl := range Tools(e.svc) {
		info := tl.Info()
		names = append(names, info.Name)
		if info.Version != Version || info.ShortDescription == "" || len(info.Description) < 80 {
			t.Errorf("%s: version %q, short %q, description %q", info.Name, info.Version, info.ShortDescription, info.Description)
		}
		if !strings.HasPrefix(info.SystemPrompt, info.Name+": ") {
			t.Errorf("%s: system prompt %q", info.Name, info.SystemPrompt)
		}
		for _, sec := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "INPUT", "OUTPUT", "EXAMPLES", "EXIT STATUS"} {
			if !strings.Contains(info.Help, "\n"+sec+"\n") {
				t.Errorf("%s: help has no %s section:\n%s", info.Name, sec, info.Help)
			}
		}
		var in map[string]any
		if err := json.Unmarshal(info.InputSchema, &in); err != nil {
			t.Fatalf("%s: input schema: %v", info.Name, err)
		}
		if in["type"] != "object" || in["additionalProperties"] != false {
			t.Errorf("%s: input schema is not a strict object: %s", info.Name, info.InputSchema)
		}
		props := in["properties"].(map[string]any)
		if _, ok := props["workspace"]; !ok {
			t.Errorf("%s: no workspace argument", info.Name)
		}
		for name, p := range props {
			if p.(map[string]any)["description"] == "" {
				t.Errorf("%s: argument %s has no description", info.Name, name)
			}
		}
		compile(info.Name+"-out", info.OutputSchema) // panics if invalid
	}
	if got := strings.Join(names, " "); got != "workspace_list workspace_read workspace_write workspace_edit workspace_remove workspace_diff" {
		t.Errorf("tools %s", got)
	}
}

func TestCutUTF8(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"},
		{"abc", 2, "ab"},
		{"aé", 2, "a"},
		{"aé", 3, "aé"},
		{"a☃", 2, "a"},
		{"a☃", 3, "a"},
		{"a☃b", 4, "a☃"},
		{"a\xff\xfe", 2, "a\xff"},
		{"a\x80\x80\x80\x80", 3, "a\x80\x80"},
		{"é\x80x", 2, "é"},
		{"é\x80x", 3, "é\x80"},
	} {
		if got := string(cutUTF8([]byte(tc.in), tc.n)); got != tc.want {
			t.Errorf("cutUTF8(%q, %d) = %q; want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func FuzzCutUTF8(f *testing.F) {
	f.Add([]byte("aé☃"), 2)
	f.Add([]byte{0xff, 0x80, 'a'}, 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 {
			return
		}
		got := cutUTF8(b, n)
		if len(got) > n || !bytes.HasPrefix(b, got) {
			t.Fatalf("cutUTF8(%q, %d) = %q", b, n, got)
		}
		if len(b) > n && len(got) < n-utf8.UTFMax {
			t.Fatalf("cutUTF8(%q, %d) = %q cuts too much", b, n, got)
		}
		if utf8.Valid(b) && !utf8.Valid(got) {
			t.Fatalf("cutUTF8(%q, %d) = %q is not valid UTF-8", b, n, got)
		}
	})
}

// TestInputSchemasCompile compiles every tool's input schema, which the
// package no longer does at init (compile panics on a bad schema).
func TestInputSchemasCompile(t *testing.T) {
	for _, sp := range specs {
		if sp.inputSchema() == nil {
			t.Errorf("%s: no input schema", sp.name)
		}
	}
}
