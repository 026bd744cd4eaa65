package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
)

func TestJournalDump(t *testing.T) {
	t.Parallel()
	dir := storeWithWorlds(t)
	requireStoreUnchanged(t, dir, func() {
		r := mustRun(t, exitOK, "", "--store", dir, "journal", "dump", "--world", "a")
		want := regexp.MustCompile(`^1 DomainEvent blake3:[0-9a-f]{12} 31 \{"\$tag":"Start","\$value":\{"target":2\}\}
2 Note blake3:[0-9a-f]{12} 4 -
3 Empty blake3:[0-9a-f]{12} 0 -
$`)
		if !want.MatchString(r.stdout) {
			t.Errorf("dump:\n%s", r.stdout)
		}

		r = mustRun(t, exitOK, "", "--store", dir, "journal", "dump", "--world", "a", "--from", "2", "--json")
		lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
		if len(lines) != 2 {
			t.Fatalf("--from 2 --json: %q", r.stdout)
		}
		var d dumpRecord
		if err := json.Unmarshal([]byte(lines[0]), &d); err != nil {
			t.Fatal(err)
		}
		if d.Seq != 2 || d.Kind != "Note" || string(d.PayloadB64) != "text" || d.Payload != nil || d.Size != 4 {
			t.Errorf("record 2: %+v", d)
		}
		if _, err := cas.ParseRef(d.Hash); err != nil {
			t.Errorf("hash %q: %v", d.Hash, err)
		}

		for _, tc := range []struct {
			args   []string
			code   int
			stderr string
		}{
			{[]string{"--world", "zzz"}, exitFailure, "world zzz has no records"},
			{[]string{"--world", "a", "--from", "4"}, exitFailure, "--from 4 is past the head of world a (seq 3)"},
			{[]string{}, exitFailure, "world main has no records"}, // --world defaults to main
			{[]string{"--world", ""}, exitUsage, "invalid world name"},
		} {
			r := run(t, nil, "", append([]string{"--store", dir, "journal", "dump"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("dump %q: exit %d, stderr %q; want %d, %q", tc.args, r.code, r.stderr, tc.code, tc.stderr)
			}
		}
	})
}

func TestJournalDumpCorrupt(t *testing.T) {
	t.Parallel()
	dir := storeWithWorlds(t)
	if err := corruptRecord(t.Context(), dir, "a", 2); err != nil {
		t.Fatal(err)
	}
	r := mustRun(t, exitFailure, "", "--store", dir, "journal", "dump", "--world", "a")
	// Record 2 was altered: the break in its link to record 3 gives it
	// away, and it is not printed.
	if strings.Count(r.stdout, "\n") != 1 || !strings.HasPrefix(r.stdout, "1 DomainEvent ") {
		t.Errorf("stdout %q; want record 1 only", r.stdout)
	}
	if !strings.Contains(r.stderr, "journal: world a: hash chain broken at seq 3") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestDumpLine(t *testing.T) {
	t.Parallel()
	node, _ := cas.Marshal(map[string]any{"k": "v"})
	for _, tc := range []struct {
		kind    string
		payload []byte
		want    string
	}{
		{"Event", node, `1 Event blake3:000000000000 ` + "8" + ` {"k":"v"}`},
		{"two words", nil, `1 "two words" blake3:000000000000 0 -`},
		{"tab\there", []byte("x"), `1 "tab\there" blake3:000000000000 1 -`},
	} {
		r := journal.Record{Seq: 1, Kind: tc.kind, Payload: tc.payload, Hash: cas.RefFromDigest(cas.BLAKE3, [32]byte{})}
		got, err := dumpLine(r, false)
		if err != nil || got != tc.want {
			t.Errorf("dumpLine(%q, %q) = %q, %v; want %q", tc.kind, tc.payload, got, err, tc.want)
		}
	}
}
