package shcmd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFindDemiurge: the demiurge beside demiurge-sh's executable (through
// a symlink to it too) comes before the one on PATH, and without either
// the error says how to install it.
func TestFindDemiurge(t *testing.T) {
	write := func(path string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := filepath.EvalSymlinks(t.TempDir()) // where go install puts both programs (/tmp may be a link)
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(bin, Name)
	write(self, 0o755)
	link := filepath.Join(t.TempDir(), "link-to-sh")
	if err := os.Symlink(self, link); err != nil {
		t.Fatal(err)
	}
	onPath := func(string) (string, error) { return "/usr/bin/demiurge", nil }
	noPath := func(string) (string, error) { return "", errors.New("not found") }

	if got, err := FindDemiurge(self, onPath); err != nil || got != "/usr/bin/demiurge" {
		t.Errorf("nothing beside: %q, %v; want PATH's", got, err)
	}
	if _, err := FindDemiurge(self, noPath); err == nil ||
		!strings.Contains(err.Error(), "go install github.com/demiurge-dev/demiurge/cmd/demiurge@latest") ||
		!strings.Contains(err.Error(), self) {
		t.Errorf("neither: %v; want how to install it", err)
	}
	write(filepath.Join(bin, "demiurge"), 0o644) // not executable: not a program
	if got, err := FindDemiurge(self, noPath); err == nil {
		t.Errorf("a file that is not executable: found %q", got)
	}
	if err := os.Chmod(filepath.Join(bin, "demiurge"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, from := range []string{self, link} {
		if got, err := FindDemiurge(from, onPath); err != nil || got != filepath.Join(bin, "demiurge") {
			t.Errorf("from %s: %q, %v; want the one beside", from, got, err)
		}
	}
	if got, err := FindDemiurge("", onPath); err != nil || got != "/usr/bin/demiurge" {
		t.Errorf("own path unknown: %q, %v; want PATH's", got, err)
	}
}

// TestWantsWorld: the spellings of --manifest hand over, one after -- or
// inside -c's script does not.
func TestWantsWorld(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--manifest", "m", "-c", "true"}, true},
		{[]string{"--store", "s", "--manifest=m"}, true},
		{[]string{"-m", "m"}, true},
		{[]string{"-c", "true"}, false},
		{[]string{"-c", "echo --manifest"}, false},
		{[]string{"--", "--manifest"}, false},
	} {
		if got := wantsWorld(tc.args); got != tc.want {
			t.Errorf("wantsWorld(%q) = %v; want %v", tc.args, got, tc.want)
		}
	}
}
