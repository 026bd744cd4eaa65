package world

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/journal"
	"github.com/demiurge-dev/demiurge/schema"
)

// DivergenceError reports the first record where re-deriving a journal
// gives something else than what the journal holds.
type DivergenceError struct {
	World string
	Seq   uint64
	// Reason says what differs, in words.
	Reason string
	// Journal is the record the journal holds at Seq (nil if the journal
	// ended before it).
	Journal *journal.Record
	// Derived is what the code derives at Seq (nil if it derives nothing
	// there).
	Derived *journal.Entry
	// JournalState and DerivedState are the cell states that Journal and
	// Derived name when they are State records, so that a report can show
	// how two states differ rather than two hashes: the journal's state
	// as read from the store, the derived one from the blob the code
	// derived with its record (a replay stores nothing). Each is nil
	// unless its record is a State record that names a state (one that
	// deletes a cell names none).
	JournalState, DerivedState *StateValue
	// Blobs are the blobs the step that derived Derived stored with its
	// records (the replayed state among them; for a snapshot, the
	// snapshot). A replay stores nothing, so they exist nowhere else:
	// replay.Keep keeps them for a person to read.
	Blobs [][]byte
	// Manifest is the manifest the code replayed the record under, and
	// JournalManifest the one the world ran when it wrote it (the latest
	// Manifest record before it; zero before the first). They differ when
	// a rerun replays under a manifest of its own
	// (RerunOptions.UnderManifest); ManifestDiff then says what differs
	// between them (from JournalManifest to Manifest), or ManifestErr why
	// it cannot.
	Manifest, JournalManifest cas.Ref
	ManifestDiff              *schema.ManifestDiff
	ManifestErr               error
}

// StateValue is a cell state named by a State record.
type StateValue struct {
	Ref cas.Ref
	// Value is the state, decoded, and Blob its bytes; nil when Err is
	// set.
	Value schema.Value
	Blob  []byte
	// Err says why the state could not be read: its blob is missing or
	// does not decode.
	Err error
}

func (e *DivergenceError) Error() string {
	kind := ""
	switch {
	case e.Journal != nil:
		kind = " (" + e.Journal.Kind + ")"
	case e.Derived != nil:
		kind = " (" + e.Derived.Kind + ")"
	}
	return fmt.Sprintf("world %s: replay diverges at seq %d%s: %s", e.World, e.Seq, kind, e.Reason)
}

// divergence returns a DivergenceError at seq with the states that r and
// w name when they are State records: r's read from the machine's store,
// w's from blobs (the step that derived w) or else from the store.
func (v *verifier) divergence(seq uint64, reason string, r *journal.Record, w *journal.Entry, blobs [][]byte) *DivergenceError {
	d := &DivergenceError{World: v.world, Seq: seq, Reason: reason, Journal: r, Derived: w}
	if r != nil && r.Kind == KindState {
		d.JournalState = v.stateValue(*r, nil)
	}
	if w != nil && w.Kind == KindState {
		d.DerivedState = v.stateValue(journal.Record{Seq: seq, Kind: w.Kind, Payload: w.Payload}, blobs)
	}
	return v.explain(d, blobs)
}

// stateValue decodes the state a State record names: from blobs if one of
// them is it, else from the machine's store. It is nil when the record
// names no state.
func (v *verifier) stateValue(r journal.Record, blobs [][]byte) *StateValue {
	sr, err := DecodeState(r)
	if err != nil {
		return &StateValue{Err: err}
	}
	if !sr.State.Valid() {
		return nil
	}
	sv := &StateValue{Ref: sr.State}
	var blob []byte
	for _, b := range blobs {
		if cas.Sum(b) == sr.State {
			blob = b
			break
		}
	}
	if blob == nil {
		if blob, err = v.m.cas.Get(v.ctx, sr.State); err != nil {
			sv.Err = fmt.Errorf("read state %s: %w", sr.State, err)
			return sv
		}
	}
	if sv.Value, err = schema.Decode(blob); err != nil {
		sv.Err = fmt.Errorf("decode state %s: %w", sr.State, err)
		return sv
	}
	sv.Blob = blob
	return sv
}

// explain adds to d the blobs of the step and the manifests the record
// was written and replayed under, with what differs between them.
func (v *verifier) explain(d *DivergenceError, blobs [][]byte) *DivergenceError {
	d.Blobs = blobs
	d.Manifest, d.JournalManifest = v.m.Catalog().ManifestRef(), v.m.Manifest()
	if d.Manifest != d.JournalManifest && d.Manifest.Valid() && d.JournalManifest.Valid() {
		d.ManifestDiff, d.ManifestErr = schema.DiffManifests(v.ctx, v.m.nodes(), d.JournalManifest, d.Manifest)
	}
	return d
}

// verifier feeds journal records to a machine: inputs are applied, and each
// derived record must equal, byte for byte, what the machine derives.
type verifier struct {
	m      *Machine
	world  string
	ctx    context.Context
	expect []journal.Entry // derived records still expected from the last input
	blobs  [][]byte        // the blobs the last input derived, which expect names
	// OnStep, if set, is called after each input is applied.
	onStep func(in *Input, step *Step)
	inputs int
	count  uint64
	// The step being read: its input's kind, seq and number of records.
	stepKind string
	stepSeq  uint64
	stepLen  int
	last     journal.Head // the last record read
	// forks are the Fork records read, checked by checkForks.
	forks []forkPoint
}

// forkPoint is a Fork record: the records before seq at+1 are world
// from's first at records, the last of which has hash hash.
type forkPoint struct {
	seq  uint64 // the Fork record's
	from string
	at   uint64
	hash cas.Ref
	raw  journal.Record
}

func (v *verifier) record(r journal.Record) error {
	v.count++
	v.last = journal.Head{Seq: r.Seq, Hash: r.Hash}
	if len(v.expect) > 0 {
		want := v.expect[0]
		v.expect = v.expect[1:]
		if r.Kind != want.Kind || !bytes.Equal(r.Payload, want.Payload) {
			reason := "the record differs from what the code derives"
			if r.Kind != want.Kind {
				reason = fmt.Sprintf("the journal has a %s record where the code derives a %s record", r.Kind, want.Kind)
			}
			rr, ww := r, want
			return v.divergence(r.Seq, reason, &rr, &ww, v.blobs)
		}
		return nil
	}
	if r.Kind == KindSnapshot {
		// Snapshots are taken when a world chooses to: check that the
		// journaled one captures the state the code re-derived.
		e, blob, err := v.m.Snapshot()
		if err != nil {
			return err
		}
		if !bytes.Equal(e.Payload, r.Payload) {
			rr, ww := r, e
			return v.explain(&DivergenceError{World: v.world, Seq: r.Seq, Reason: "the snapshot differs from the state the code re-derives", Journal: &rr, Derived: &ww}, [][]byte{blob})
		}
		return nil
	}
	if r.Kind == KindFork {
		return v.fork(r)
	}
	if !IsInput(r.Kind) {
		rr := r
		return v.divergence(r.Seq, fmt.Sprintf("the journal has a %s record the code does not derive (an extra record)", r.Kind), &rr, nil, nil)
	}
	in, err := DecodeInput(r)
	if err != nil {
		return err
	}
	in.raw = r.Payload // the input is what was journaled, byte for byte
	if in.Kind != KindManifest && in.Stamp.JournalHeight != v.m.Height() {
		return fmt.Errorf("world %s: record %d was stamped at height %d, but %d records precede it", v.world, r.Seq, in.Stamp.JournalHeight, v.m.Height())
	}
	step, err := v.m.Apply(v.ctx, in)
	if err != nil {
		return fmt.Errorf("world %s: replaying record %d (%s): %w", v.world, r.Seq, r.Kind, err)
	}
	if !bytes.Equal(step.Records[0].Payload, r.Payload) {
		rr, ww := r, step.Records[0]
		return v.explain(&DivergenceError{World: v.world, Seq: r.Seq, Reason: "the input record does not re-encode to the same bytes", Journal: &rr, Derived: &ww}, step.Blobs)
	}
	v.inputs++
	v.expect, v.blobs = step.Records[1:], step.Blobs
	v.stepKind, v.stepSeq, v.stepLen = r.Kind, r.Seq, len(step.Records)
	if v.onStep != nil {
		v.onStep(in, step)
	}
	return nil
}

// finish reports derived records the journal is missing.
func (v *verifier) finish() error {
	if len(v.expect) > 0 {
		ww := v.expect[0]
		return v.divergence(v.m.Height()-uint64(len(v.expect))+1,
			fmt.Sprintf("the code derives a %s record the journal does not have (a missing record)", ww.Kind), nil, &ww, v.blobs)
	}
	return nil
}

// fork checks a Fork record where a step may begin: it must follow the
// record it names. The records before it are checked against the chain of
// the world it names once the read is done (checkForks).
func (v *verifier) fork(r journal.Record) error {
	fp, err := decodeFork(r)
	if err != nil {
		return err
	}
	if fp.at != r.Seq-1 {
		rr := r
		return v.divergence(r.Seq, fmt.Sprintf("the Fork record says the fork kept world %s's first %d records, but %d records precede it", fp.from, fp.at, r.Seq-1), &rr, nil, nil)
	}
	v.m.height++ // the Fork record's own seq
	v.forks = append(v.forks, fp)
	return nil
}

// decodeFork decodes a Fork record.
func decodeFork(r journal.Record) (forkPoint, error) {
	fp := forkPoint{seq: r.Seq, raw: r}
	v, err := schema.Decode(r.Payload)
	if err != nil {
		return fp, fmt.Errorf("world: record %d (%s): %w", r.Seq, r.Kind, err)
	}
	m, ok := v.(*schema.Map)
	if !ok {
		return fp, fmt.Errorf("world: record %d (%s) is not a record", r.Seq, r.Kind)
	}
	w, _ := m.Get("world")
	at, _ := m.Get("seq")
	h, _ := m.Get("hash")
	fp.from, _ = w.(string)
	fp.at, _ = at.(uint64)
	hs, _ := h.(string)
	if fp.hash, err = cas.ParseRef(hs); err != nil || journal.ValidateWorld(fp.from) != nil || fp.at == 0 {
		return fp, fmt.Errorf("world: record %d (%s): want {world, seq, hash}, got %s", r.Seq, r.Kind, schema.ValueJSON(v))
	}
	return fp, nil
}

// checkForks checks that the records before each Fork record read are
// the records of the world it was forked from: chained from that world's
// genesis, they end at the hash the Fork record names. A fork of a fork
// is checked against each of its origins.
func (v *verifier) checkForks(j journal.Reader) error {
	for _, fp := range v.forks {
		prev := journal.Genesis(fp.from)
		err := j.Read(v.ctx, v.world, 1, func(r journal.Record) error {
			if r.Seq > fp.at {
				return errWindowDone
			}
			b, err := journal.Record{Seq: r.Seq, Kind: r.Kind, Payload: r.Payload, Prev: prev}.Encode()
			if err != nil {
				return err
			}
			prev = cas.Sum(b)
			return nil
		})
		if err != nil && !errors.Is(err, errWindowDone) {
			return err
		}
		if prev != fp.hash {
			rr := fp.raw
			return v.divergence(fp.seq, fmt.Sprintf("the records before the Fork record are not world %s's first %d records: chained from its genesis they end at %s, the Fork record says %s",
				fp.from, fp.at, prev.Short(), fp.hash.Short()), &rr, nil, nil)
		}
	}
	return nil
}
