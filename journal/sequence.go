package journal

import (
	"bytes"
	"io"
	"iter"

	"github.com/fxamacker/cbor/v2"
)

// DecodeRecords reads b as a CBOR sequence of encoded records (a session
// bundle's journal.cbor) and yields each record with its position from 1,
// as DecodeRecord decodes it from its exact bytes. A record that does not
// decode is yielded with its error, and the sequence ends there. Whether
// the records chain is the caller's to check.
func DecodeRecords(b []byte) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		dec := cbor.NewDecoder(bytes.NewReader(b))
		for {
			// The decoder finds where each item ends; the record is
			// decoded (and hashed) from the exact bytes.
			start := dec.NumBytesRead()
			var raw cbor.RawMessage
			if err := dec.Decode(&raw); err == io.EOF {
				return
			} else if err != nil {
				yield(Record{}, err)
				return
			}
			r, err := DecodeRecord(b[start:dec.NumBytesRead()])
			if !yield(r, err) || err != nil {
				return
			}
		}
	}
}
