// Package blobecho is the reducer of the blob echo example world,
// demiurge's port of AgentOS's 02-blob-echo: a Start{data} event stores
// the bytes with the blob.put micro-effect, reads them back with blob.get,
// and checks that what came back is what went in.
//
// The world's AIR (manifest.air.json and the *.air.json files beside it)
// declares the schemas blobecho/State@1 and blobecho/Event@1, the module
// blobecho/Echo@1 that names this reducer, the grant blob_grant of the
// built-in cap sys/blob@1, and a policy that allows blob.put and blob.get
// from this reducer and nothing else. Register adds the reducer to a
// binary's registry.
//
// The reducer computes the blob ref itself, as blob.put requires: the
// BLAKE3 of the raw bytes ("blake3:<hex>"). It is deterministic: it reads
// nothing but its state and event.
package blobecho

import (
	"errors"
	"fmt"

	"github.com/demiurge-dev/demiurge/cas"
	"github.com/demiurge-dev/demiurge/examples/internal/arm"
	"github.com/demiurge-dev/demiurge/reducer"
	"github.com/demiurge-dev/demiurge/schema"
)

// ModuleName is the name of the defmodule the reducer is registered under.
const ModuleName = "blobecho/Echo@1"

// EventSchema is the reducer's event, the schema to send Start in.
const EventSchema = "blobecho/Event@1"

// The arms of blobecho/Phase@1, the state's pc.
const (
	Idle    = "Idle"
	Putting = "Putting"
	Getting = "Getting"
	Done    = "Done"
	Failed  = "Failed"
)

// State is the Go form of blobecho/State@1. Refs are "blake3:<hex>" texts.
type State struct {
	PC reducer.Variant `cbor:"pc"`
	// PendingBlobRef is the ref of the bytes being stored.
	PendingBlobRef *string `cbor:"pending_blob_ref"`
	// StoredBlobRef is the ref blob.put's receipt confirmed.
	StoredBlobRef *string `cbor:"stored_blob_ref"`
	// RetrievedBlobRef, RetrievedBlobHash and RetrievedSize describe what
	// blob.get returned: the ref it was asked for, the BLAKE3 of the bytes
	// it returned, and their size.
	RetrievedBlobRef  *string `cbor:"retrieved_blob_ref"`
	RetrievedBlobHash *string `cbor:"retrieved_blob_hash"`
	RetrievedSize     *uint64 `cbor:"retrieved_size"`
	// DataOK is whether the bytes read back hash to the stored ref.
	DataOK *bool `cbor:"data_ok"`
	// Error says why the echo failed.
	Error *string `cbor:"error"`
}

// Start is the Go form of blobecho/Start@1.
type Start struct {
	Data []byte `cbor:"data"`
}

type putParams struct {
	BlobRef string `cbor:"blob_ref"`
	Bytes   []byte `cbor:"bytes"`
}

type getParams struct {
	BlobRef string `cbor:"blob_ref"`
}

// putResult is the part of sys/BlobPutResult@1 the reducer reads.
type putResult struct {
	Status    string    `cbor:"status"`
	Requested getParams `cbor:"requested"`
	Receipt   struct {
		BlobRef string `cbor:"blob_ref"`
		Size    uint64 `cbor:"size"`
	} `cbor:"receipt"`
}

// getResult is the part of sys/BlobGetResult@1 the reducer reads.
type getResult struct {
	Status    string    `cbor:"status"`
	Requested getParams `cbor:"requested"`
	Receipt   struct {
		BlobRef string `cbor:"blob_ref"`
		Size    uint64 `cbor:"size"`
		Bytes   []byte `cbor:"bytes"`
	} `cbor:"receipt"`
}

// ErrBadEvent is returned (wrapped) for an event that is not a
// blobecho/Event@1 value.
var ErrBadEvent = errors.New("blobecho: bad event")

// Reducer is the blob echo's reducer. The zero value is ready to use.
//
//   - Start computes the BLAKE3 ref of data and emits blob.put; the echo
//     is Putting. A Start while an echo is under way changes nothing.
//   - PutResult for the pending ref: if the put succeeded, the reducer
//     records the stored ref and emits blob.get for it (Getting).
//   - GetResult for the stored ref: the reducer hashes the returned bytes
//     and records whether they match the stored ref (data_ok); Done.
//
// A result with a status other than "ok" ends the echo as Failed. Results
// that do not belong to the echo under way change nothing.
type Reducer struct{}

var _ reducer.Reducer = Reducer{}

// Step implements reducer.Reducer. A nil state is a fresh echo: Idle.
func (Reducer) Step(_ *reducer.Context, state, event schema.Value) (reducer.Output, error) {
	st := State{PC: reducer.Variant{Tag: Idle}}
	if err := reducer.StateToGo(state, &st); err != nil {
		return reducer.Output{}, fmt.Errorf("blobecho: %w", err)
	}
	tag, payload, ok := arm.Split(event)
	if !ok {
		return reducer.Output{}, fmt.Errorf("%w: want a variant Start|PutResult|GetResult, got %s", ErrBadEvent, schema.String(event))
	}
	unchanged := reducer.Output{State: state}
	var out reducer.Output
	switch tag {
	case "Start":
		var ev Start
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: Start wants {data: bytes}, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if st.PC.Tag == Putting || st.PC.Tag == Getting {
			return unchanged, nil
		}
		ref := cas.Sum(ev.Data).String()
		st = State{PC: reducer.Variant{Tag: Putting}, PendingBlobRef: &ref}
		params, err := reducer.FromGo(putParams{BlobRef: ref, Bytes: ev.Data})
		if err != nil {
			return reducer.Output{}, fmt.Errorf("blobecho: encode blob.put params: %w", err)
		}
		out.Effects = []reducer.Effect{{Kind: "blob.put", Params: params}}
	case "PutResult":
		var ev putResult
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: PutResult wants a sys/BlobPutResult@1, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if st.PC.Tag != Putting || st.PendingBlobRef == nil || ev.Requested.BlobRef != *st.PendingBlobRef {
			return unchanged, nil
		}
		if ev.Status != "ok" {
			st.fail("blob.put ended with status %q", ev.Status)
			break
		}
		stored := ev.Receipt.BlobRef
		st.PC, st.StoredBlobRef = reducer.Variant{Tag: Getting}, &stored
		params, err := reducer.FromGo(getParams{BlobRef: stored})
		if err != nil {
			return reducer.Output{}, fmt.Errorf("blobecho: encode blob.get params: %w", err)
		}
		out.Effects = []reducer.Effect{{Kind: "blob.get", Params: params}}
	case "GetResult":
		var ev getResult
		if err := reducer.ToGo(payload, &ev); err != nil {
			return reducer.Output{}, fmt.Errorf("%w: GetResult wants a sys/BlobGetResult@1, got %s: %v", ErrBadEvent, schema.String(payload), err)
		}
		if st.PC.Tag != Getting || st.StoredBlobRef == nil || ev.Requested.BlobRef != *st.StoredBlobRef {
			return unchanged, nil
		}
		if ev.Status != "ok" {
			st.fail("blob.get ended with status %q", ev.Status)
			break
		}
		ref, hash, size := ev.Receipt.BlobRef, cas.Sum(ev.Receipt.Bytes).String(), ev.Receipt.Size
		ok := hash == *st.StoredBlobRef && ref == *st.StoredBlobRef && size == uint64(len(ev.Receipt.Bytes))
		st.PC = reducer.Variant{Tag: Done}
		st.RetrievedBlobRef, st.RetrievedBlobHash, st.RetrievedSize, st.DataOK = &ref, &hash, &size, &ok
	default:
		return reducer.Output{}, fmt.Errorf("%w: unknown variant tag %q (want Start|PutResult|GetResult)", ErrBadEvent, tag)
	}
	v, err := reducer.FromGo(st)
	if err != nil {
		return reducer.Output{}, fmt.Errorf("blobecho: encode state: %w", err)
	}
	out.State = v
	return out, nil
}

func (st *State) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	st.PC, st.Error = reducer.Variant{Tag: Failed}, &msg
}

// Register adds the blob echo's reducer to r under ModuleName. It panics
// if the name is already registered: it is for program setup.
func Register(r *reducer.Registry) {
	r.MustRegister(ModuleName, Reducer{})
}
