package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/internal/store"
)

func TestCASGet(t *testing.T) {
	t.Parallel()
	node, err := cas.Marshal(map[string]any{"pc": map[string]any{"$tag": "Done"}, "remaining": 0, "raw": []byte{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	dir := newStore(t, "raw bytes\x00\xff", string(node))
	rawRef, nodeRef := cas.Sum([]byte("raw bytes\x00\xff")).String(), cas.Sum(node).String()
	missing := cas.Sum([]byte("never stored")).String()

	requireStoreUnchanged(t, dir, func() {
		for _, tc := range []struct {
			name   string
			args   []string
			code   int
			stdout string
			stderr string // substring
		}{
			{"raw", []string{rawRef}, exitOK, "raw bytes\x00\xff", ""},
			{"node raw", []string{nodeRef}, exitOK, string(node), ""},
			{"node json", []string{"--json", nodeRef}, exitOK, `{"pc":{"$tag":"Done"},"raw":{"$bytes":"AQI="},"remaining":0}` + "\n", ""},
			{"raw json", []string{"--json", rawRef}, exitFailure, "", "not a CBOR node"},
			{"missing", []string{missing}, exitFailure, "", "cas get: cas: not found: " + missing + " (store " + dir + ")"},
			{"sha256", []string{"sha256:" + strings.Repeat("ab", 32)}, exitFailure, "", "not found"},
			{"bad ref", []string{"blake3:XYZ"}, exitUsage, "", "invalid ref"},
		} {
			r := run(t, nil, "", append([]string{"--store", dir, "cas", "get"}, tc.args...)...)
			if r.code != tc.code || r.stdout != tc.stdout || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want %d, %q, %q", tc.name, r.code, r.stdout, r.stderr, tc.code, tc.stdout, tc.stderr)
			}
		}
	})
}

func TestCASGetCorrupt(t *testing.T) {
	t.Parallel()
	dir := newStore(t, "good", "bad")
	bad := cas.Sum([]byte("bad"))
	if err := corruptBlob(dir, bad); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, exitFailure, "", "--store", dir, "cas", "get", bad.String())
	if r.stdout != "" || !strings.Contains(r.stderr, "cas: corrupt blob "+bad.String()) {
		t.Errorf("stdout %q, stderr %q", r.stdout, r.stderr)
	}
}

func TestCASGetNoStore(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "none")
	r := mustRun(t, exitFailure, "", "--store", dir, "cas", "get", cas.Sum(nil).String())
	if !strings.Contains(r.stderr, store.ErrNotExist.Error()) {
		t.Errorf("stderr %q", r.stderr)
	}
}
