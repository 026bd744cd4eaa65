package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/diff"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
	"github.com/demiurge-dev/demiurge/world"
)

// DescribeOptions change what Describe says of a divergence.
type DescribeOptions struct {
	// KeptIn is the store Keep kept the divergence's blobs in: the report
	// then says how to read the states there.
	KeptIn string
}

// Describe renders an error from a replay for a person: for a divergence,
// the world, seq and record kind, then both sides decoded to JSON and a
// line diff between them, and, where a side is a State record, the state
// it names: for two states, the paths where they differ and a line diff of
// their JSON. A record replayed under another manifest than the one it was
// written under (replay --under-manifest) is followed by the defs whose
// hashes differ between the two, each with a diff of its JSON. Other
// errors are rendered as they are.
func Describe(err error) string { return DescribeWith(err, DescribeOptions{}) }

// DescribeWith is Describe with options.
func DescribeWith(err error, o DescribeOptions) string {
	var d *world.DivergenceError
	if !errors.As(err, &d) {
		return err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "replay diverges: world %s, seq %d", d.World, d.Seq)
	var journalJS, derivedJS string
	if d.Journal != nil {
		fmt.Fprintf(&b, ", journal record %s", d.Journal.Kind)
		journalJS = d.Journal.Kind + " " + PayloadJSON(d.Journal.Payload) + "\n"
	}
	if d.Derived != nil {
		fmt.Fprintf(&b, ", derived record %s", d.Derived.Kind)
		derivedJS = d.Derived.Kind + " " + PayloadJSON(d.Derived.Payload) + "\n"
	}
	fmt.Fprintf(&b, "\n%s\n", d.Reason)
	switch {
	case d.Journal != nil && d.Derived != nil:
		b.WriteString(Diff("journal", journalJS, "replay", derivedJS))
	case d.Journal != nil:
		b.WriteString("journal has:\n" + journalJS)
	case d.Derived != nil:
		b.WriteString("replay derives:\n" + derivedJS)
	}
	describeStates(&b, d)
	describeManifests(&b, d)
	describeKept(&b, d, o.KeptIn)
	return strings.TrimSuffix(b.String(), "\n")
}

// describeManifests writes what differs between the manifest a record
// was written under and the one it was replayed under.
func describeManifests(b *strings.Builder, d *world.DivergenceError) {
	if d.Manifest == d.JournalManifest || !d.Manifest.Valid() || !d.JournalManifest.Valid() {
		return
	}
	fmt.Fprintf(b, "the record was written under manifest %s and replayed under manifest %s", d.JournalManifest.Short(), d.Manifest.Short())
	md := d.ManifestDiff
	if md == nil {
		if d.ManifestErr != nil {
			fmt.Fprintf(b, "; what differs between them cannot be shown: %v", d.ManifestErr)
		}
		b.WriteString("\n")
		return
	}
	switch n := len(md.Defs); {
	case n == 0 && md.RestA == nil:
		b.WriteString(", which pin the same defs\n")
		return
	case n == 0:
		b.WriteString(", which pin the same defs\n")
	default:
		fmt.Fprintf(b, "; %s %s:\n", plural(n, "def"), pluralVerb(n, "differs", "differ"))
		for _, c := range md.Defs {
			fmt.Fprintf(b, "  %s %s: %s → %s\n", c.Kind, c.Name, refOrNone(c.A), refOrNone(c.B))
		}
	}
	for _, c := range md.Defs {
		if c.Err != nil {
			fmt.Fprintf(b, "%s %s cannot be shown: %v\n", c.Kind, c.Name, c.Err)
			continue
		}
		b.WriteString(Diff(fmt.Sprintf("%s %s in manifest %s", c.Kind, c.Name, md.A.Short()), defJSON(c.ValueA),
			fmt.Sprintf("%s %s in manifest %s", c.Kind, c.Name, md.B.Short()), defJSON(c.ValueB)))
	}
	if md.RestA != nil {
		b.WriteString("the manifests' own fields (routing, triggers, defaults, bindings) differ:\n")
		b.WriteString(Diff("manifest "+md.A.Short(), IndentJSON(md.RestA)+"\n", "manifest "+md.B.Short(), IndentJSON(md.RestB)+"\n"))
	}
}

func refOrNone(r cas.Ref) string {
	if !r.Valid() {
		return "(none)"
	}
	return r.Short()
}

// defJSON is a def's indented JSON, "(none)" for a def a manifest lacks.
func defJSON(v schema.Value) string {
	if v == nil {
		return "(none)\n"
	}
	return IndentJSON(v) + "\n"
}

// describeKept says where the divergence's states and blobs can be read.
func describeKept(b *strings.Builder, d *world.DivergenceError, dir string) {
	if dir == "" {
		return
	}
	fmt.Fprintf(b, "a replay writes nothing to the store it reads; what the diverging step derived is kept in the store %s", dir)
	var lines []string
	for _, s := range []struct {
		what string
		sv   *world.StateValue
	}{{"the journal's state", d.JournalState}, {"the replayed state", d.DerivedState}} {
		if s.sv != nil && s.sv.Err == nil && s.sv.Ref.Valid() {
			lines = append(lines, fmt.Sprintf("  demiurge --store %s cas get --json %s   # %s\n", dir, s.sv.Ref, s.what))
		}
	}
	if d.JournalState != nil && d.JournalState.Blob != nil {
		b.WriteString(", with the journal's state")
	}
	b.WriteString(":\n")
	if len(lines) == 0 {
		const most = 8
		for i, blob := range d.Blobs {
			if i == most {
				fmt.Fprintf(b, "  … and %d more\n", len(d.Blobs)-most)
				break
			}
			fmt.Fprintf(b, "  demiurge --store %s cas get %s\n", dir, cas.Sum(blob))
		}
	}
	for _, l := range lines {
		b.WriteString(l)
	}
}

// describeStates writes the states a divergence's State records name: for
// two, where they differ and a diff of their JSON; for one, its JSON.
func describeStates(b *strings.Builder, d *world.DivergenceError) {
	js, ds := d.JournalState, d.DerivedState
	if js == nil && ds == nil {
		return
	}
	for _, s := range []struct {
		side string
		sv   *world.StateValue
	}{{"journal", js}, {"replayed", ds}} {
		if s.sv != nil && s.sv.Err != nil {
			name := ""
			if s.sv.Ref.Valid() {
				name = " " + s.sv.Ref.Short()
			}
			fmt.Fprintf(b, "the %s state%s cannot be shown: %v\n", s.side, name, s.sv.Err)
		}
	}
	var jcell, dcell string
	if d.Journal != nil {
		jcell = stateCell(d.Journal.Kind, d.Journal.Payload)
	}
	if d.Derived != nil {
		dcell = stateCell(d.Derived.Kind, d.Derived.Payload)
	}
	jok, dok := js != nil && js.Err == nil, ds != nil && ds.Err == nil
	switch {
	case jok && dok:
		changes, total := ValueChanges(js.Value, ds.Value, maxChanges)
		switch {
		case total == 0:
			// Only a blob that is not canonical CBOR can do this.
			fmt.Fprintf(b, "the two states decode to equal values: their encodings differ\n")
			return
		case jcell == dcell:
			fmt.Fprintf(b, "the state of %s differs at %s:\n", jcell, plural(total, "path"))
		default:
			fmt.Fprintf(b, "the journal's state of %s and the replayed state of %s differ at %s:\n", jcell, dcell, plural(total, "path"))
		}
		for _, c := range changes {
			fmt.Fprintf(b, "  %s\n", c)
		}
		if total > len(changes) {
			fmt.Fprintf(b, "  … and %d more\n", total-len(changes))
		}
		b.WriteString(Diff("journal state "+js.Ref.Short(), IndentJSON(js.Value)+"\n",
			"replayed state "+ds.Ref.Short(), IndentJSON(ds.Value)+"\n"))
	case jok:
		fmt.Fprintf(b, "journal state of %s, %s:\n%s\n", jcell, js.Ref.Short(), IndentJSON(js.Value))
	case dok:
		fmt.Fprintf(b, "replayed state of %s, %s:\n%s\n", dcell, ds.Ref.Short(), IndentJSON(ds.Value))
	}
}

// stateCell names the cell of a State record: its reducer, and its key if
// it has one; "" for another kind of record.
func stateCell(kind string, payload []byte) string {
	sr, err := world.DecodeState(journal.Record{Kind: kind, Payload: payload})
	if err != nil {
		return ""
	}
	if sr.Key != nil {
		return sr.Reducer + " (key " + string(schema.ValueJSON(sr.Key)) + ")"
	}
	return sr.Reducer
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// PayloadJSON decodes a record payload (canonical CBOR) to indented JSON;
// bytes that do not decode are shown as hex.
func PayloadJSON(p []byte) string {
	v, err := schema.Decode(p)
	if err != nil {
		return fmt.Sprintf("<%d bytes that do not decode: %x>", len(p), p)
	}
	return IndentJSON(v)
}

// IndentJSON renders a value as schema.ValueJSON does, indented by two
// spaces, one member or element a line.
func IndentJSON(v schema.Value) string {
	js := schema.ValueJSON(v)
	var out bytes.Buffer
	if err := json.Indent(&out, js, "", "  "); err != nil {
		return string(js)
	}
	return out.String()
}

// Diff returns a line diff of old and new in the unified format: a
// "--- oldName" and a "+++ newName" line, then hunks of changed lines
// with up to 3 unchanged lines around them ("-" removed, "+" added, " "
// unchanged). It is "" when old and new are equal. A text that does not
// end in a newline is marked so on its last line.
//
// The diff is anchored on lines that appear once in each text (see
// github.com/rogpeppe/go-internal/diff): it takes O(n log n) time in the
// number of lines, so two long texts — a state of many thousand lines —
// diff in milliseconds.
func Diff(oldName, old, newName, new string) string {
	out := diff.Diff(oldName, []byte(old), newName, []byte(new))
	// The first line, "diff oldName newName", repeats the two after it.
	if _, rest, ok := bytes.Cut(out, []byte("\n")); ok && bytes.HasPrefix(out, []byte("diff ")) {
		out = rest
	}
	return string(out)
}

// maxChanges is how many differing paths Describe lists.
const maxChanges = 20

// ValueChanges lists where two values differ, one line a path, in the
// order of the values' canonical keys: "turn.round: 3 → 4". A path is
// made of record fields (".name", or `["odd name"]`), list indexes ("[2]")
// and keys of maps with other than text keys ("[<key as JSON>]"); values
// are shown as compact JSON, cut at 60 bytes, and "(absent)" stands for a
// field or element one side does not have. Two variants of different
// tags differ as a whole. It lists at most limit paths (all of them when
// limit < 0) and returns how many there are in all.
func ValueChanges(a, b schema.Value, limit int) (changes []string, total int) {
	w := &changeWalker{limit: limit}
	w.walk("", a, b, true, true)
	return w.changes, w.total
}

type changeWalker struct {
	limit   int
	changes []string
	total   int
}

func (w *changeWalker) add(path string, a, b schema.Value, aok, bok bool) {
	w.total++
	if w.limit >= 0 && len(w.changes) >= w.limit {
		return
	}
	if path == "" {
		path = "(the whole value)"
	}
	w.changes = append(w.changes, strings.TrimPrefix(path, ".")+": "+clipValue(a, aok)+" → "+clipValue(b, bok))
}

// walk compares a and b at path; aok and bok say whether each side has a
// value there at all.
func (w *changeWalker) walk(path string, a, b schema.Value, aok, bok bool) {
	if !aok || !bok {
		w.add(path, a, b, aok, bok)
		return
	}
	switch a := a.(type) {
	case *schema.Map:
		bm, ok := b.(*schema.Map)
		if !ok || variantTag(a) != variantTag(bm) {
			break
		}
		w.walkMap(path, a, bm)
		return
	case []schema.Value:
		bl, ok := b.([]schema.Value)
		if !ok {
			break
		}
		for i := range max(len(a), len(bl)) {
			var x, y schema.Value
			if i < len(a) {
				x = a[i]
			}
			if i < len(bl) {
				y = bl[i]
			}
			w.walk(path+"["+strconv.Itoa(i)+"]", x, y, i < len(a), i < len(bl))
		}
		return
	}
	if !schema.Equal(a, b) {
		w.add(path, a, b, true, true)
	}
}

// walkMap merges two maps' entries, which both hold in canonical key
// order, and compares them key by key.
func (w *changeWalker) walkMap(path string, a, b *schema.Map) {
	ae, be := a.Entries(), b.Entries()
	i, j := 0, 0
	for i < len(ae) || j < len(be) {
		c := 0
		switch {
		case i == len(ae):
			c = 1
		case j == len(be):
			c = -1
		default:
			c = compareKeys(ae[i].Key, be[j].Key)
		}
		switch {
		case c == 0:
			w.walk(path+keyPath(ae[i].Key), ae[i].Value, be[j].Value, true, true)
			i++
			j++
		case c < 0:
			w.walk(path+keyPath(ae[i].Key), ae[i].Value, nil, true, false)
			i++
		default:
			w.walk(path+keyPath(be[j].Key), nil, be[j].Value, false, true)
			j++
		}
	}
}

// compareKeys orders map keys as schema.Map does: by their canonical
// encodings.
func compareKeys(a, b schema.Value) int {
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			// Text keys: shorter first, then bytewise.
			if len(x) != len(y) {
				return len(x) - len(y)
			}
			return strings.Compare(x, y)
		}
	}
	ea, _ := schema.EncodeBody(a)
	eb, _ := schema.EncodeBody(b)
	return bytes.Compare(ea, eb)
}

// variantTag returns a variant's tag, "" for other maps.
func variantTag(m *schema.Map) string {
	if tag, _, ok := m.VariantTag(); ok {
		return tag
	}
	return ""
}

var plainKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$@/-]*$`) })

// keyPath renders a map key as a path element.
func keyPath(k schema.Value) string {
	if s, ok := k.(string); ok {
		if plainKey().MatchString(s) {
			return "." + s
		}
		return "[" + strconv.Quote(s) + "]"
	}
	return "[" + string(schema.ValueJSON(k)) + "]"
}

// clipValue renders a value for a change line.
func clipValue(v schema.Value, ok bool) string {
	if !ok {
		return "(absent)"
	}
	s := string(schema.ValueJSON(v))
	const most = 60
	if len(s) > most {
		cut := most
		for cut > 0 && s[cut]&0xc0 == 0x80 { // not inside a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// pluralVerb is one for n == 1, else many.
func pluralVerb(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
