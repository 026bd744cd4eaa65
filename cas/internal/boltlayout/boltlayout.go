// Package boltlayout is where cas.Bolt keeps blobs in a bbolt file: the
// store's own code and its tests read it; nothing outside cas depends on
// it (castest exposes what other packages' tests need to damage a store).
package boltlayout

// Bucket is the name of the bbolt bucket a Bolt store keeps its blobs in,
// each under its 32-byte BLAKE3 digest. A blob smaller than BlobBucketMin
// is the key's value; a larger one is kept in a nested bucket under the
// key, as the value of that bucket's one key BlobKey. Readers accept
// either form at any size.
const Bucket = "cas"

// BlobBucketMin is the size from which Bolt puts a blob in a nested
// bucket of its own rather than as a value of Bucket. bbolt never splits a
// leaf of four keys or fewer, whatever the size of their values, and a
// commit rewrites every leaf it added a key to: in a flat bucket a 1 MiB
// put rewrites the one to three 1 MiB blobs that share its leaf (bbolt
// allocates and writes ~4.4 MiB per 1 MiB put). In a bucket of its own, a
// blob shares its leaf with nothing, and a put writes its pages once plus
// a few small ones. Below this size the nested bucket's extra pages cost
// more than the rewrite saves (docs/BENCHMARKS.md, "cas").
const BlobBucketMin = 16 << 10

// BlobKey is the key of a blob's bytes inside its nested bucket (see
// Bucket).
const BlobKey = "blob"
