package journal

import (
	"errors"
	"fmt"

	"go.etcd.io/bbolt"
)

// Limits of one group commit. An append larger than maxGroupBytes is
// committed alone.
const (
	maxGroupAppends = 1024
	maxGroupBytes   = 64 << 20
)

// appendReq is one AppendWith call waiting to be committed.
type appendReq struct {
	world   string
	expect  Head
	next    Head     // the head after the append
	records [][]byte // the encoded records, chained onto expect
	fn      func(*bbolt.Tx) error
	size    int               // encoded bytes, for group limits
	taken   bool              // a commit took it (guarded by Bolt.mu)
	done    chan appendResult // cap 1; receives the outcome once durable
}

type appendResult struct {
	head     Head
	err      error
	panicked bool // fn panicked with panicVal
	panicVal any
}

// commitLoop is the committer goroutine: whenever appends queue up while
// a commit runs, it waits for that commit to end, takes every pending
// append, commits them in one transaction and acknowledges them. It exits
// when Close was called and nothing is pending.
func (j *Bolt) commitLoop() {
	defer close(j.done)
	for {
		j.commitMu.Lock()
		n, stopping := j.commitGroup()
		j.commitMu.Unlock()
		if n == 0 {
			if stopping {
				return
			}
			<-j.wake
		}
	}
}

// commitGroup takes every pending append (up to the group limits) and
// commits them as one group. It returns how many it took and whether Close
// was called. j.commitMu must be held.
func (j *Bolt) commitGroup() (n int, stopping bool) {
	j.mu.Lock()
	group := j.takeLocked(nil)
	stopping = j.stopping
	j.mu.Unlock()
	if len(group) > 0 {
		j.commit(group)
	}
	return len(group), stopping
}

// takeLocked moves pending appends into group, in arrival order, up to the
// group limits (at least one), and marks them taken. j.mu must be held.
func (j *Bolt) takeLocked(group []*appendReq) []*appendReq {
	size := 0
	n := 0
	for _, r := range j.pending {
		if n > 0 && (n >= maxGroupAppends || size+r.size > maxGroupBytes) {
			break
		}
		r.taken = true
		group = append(group, r)
		size += r.size
		n++
	}
	rest := copy(j.pending, j.pending[n:])
	clear(j.pending[rest:])
	j.pending = j.pending[:rest]
	return group
}

// commit writes a group of appends and acknowledges each one after the
// transaction holding it is durable. If the group's transaction fails
// because one append's fn failed, that append fails and the others are
// committed again without it; if it fails otherwise (e.g. an I/O error),
// each append is retried alone so only the failing ones get an error.
func (j *Bolt) commit(group []*appendReq) {
	results := make([]appendResult, len(group))
	live := make([]int, len(group))
	for i := range live {
		live[i] = i
	}
	for len(live) > 0 {
		culprit, err := j.tryCommit(group, live, results)
		if err == nil {
			break
		}
		if culprit >= 0 {
			live = removeIndex(live, culprit)
			continue
		}
		if len(live) == 1 {
			results[live[0]] = appendResult{err: commitError(group[live[0]].world, err)}
			break
		}
		for _, i := range live {
			if c, err := j.tryCommit(group, []int{i}, results); err != nil && c < 0 {
				results[i] = appendResult{err: commitError(group[i].world, err)}
			}
		}
		break
	}
	for i, r := range group {
		r.done <- results[i]
	}
	j.nAppends.Add(uint64(len(group)))
}

func removeIndex(live []int, v int) []int {
	for k, i := range live {
		if i == v {
			return append(live[:k], live[k+1:]...)
		}
	}
	return live
}

func commitError(world string, err error) error {
	return fmt.Errorf("journal: world %s: commit: %w", world, dbError(err))
}

// errFnFailed aborts a group transaction when an append's fn failed; the
// failure itself is in that append's result.
var errFnFailed = errors.New("journal: append callback failed")

// tryCommit applies the appends group[i] for i in live in one bbolt write
// transaction, in order, and commits it. It fills results for every live
// append. If an append's fn fails, it returns that append's index and an
// error, and the transaction is rolled back; any other failure returns
// -1 and the error.
func (j *Bolt) tryCommit(group []*appendReq, live []int, results []appendResult) (culprit int, err error) {
	culprit = -1
	defer func() {
		// bbolt can panic on a damaged file; Update has rolled back.
		if p := recover(); p != nil {
			culprit, err = -1, fmt.Errorf("bbolt panicked: %v", p)
		}
	}()
	err = j.db.Update(func(tx *bbolt.Tx) error {
		c, err := applyGroup(tx, group, live, results)
		culprit = c
		return err
	})
	if err == nil {
		j.nCommits.Add(1)
	}
	return culprit, err
}

// worldState is a world's head as the appends of one group move it.
type worldState struct {
	head   Head
	err    error         // the world's stored state is unusable
	bucket *bbolt.Bucket // nil until the world has records
	dirty  bool          // head moved: write it back
}

func applyGroup(tx *bbolt.Tx, group []*appendReq, live []int, results []appendResult) (int, error) {
	worlds := make(map[string]*worldState, 1)
	for _, i := range live {
		r := group[i]
		ws := worlds[r.world]
		if ws == nil {
			ws = loadWorld(tx, r.world)
			worlds[r.world] = ws
		}
		if ws.err != nil {
			results[i] = appendResult{err: ws.err}
			continue
		}
		if ws.head != r.expect {
			results[i] = appendResult{err: &ConflictError{World: r.world, Expect: r.expect, Actual: ws.head}}
			continue
		}
		if r.fn != nil {
			if res, failed := callFn(r.fn, tx); failed {
				results[i] = res
				return i, errFnFailed
			}
		}
		if len(r.records) > 0 {
			if ws.bucket == nil {
				b, err := tx.CreateBucket(worldBucketName(r.world))
				if err != nil {
					return -1, fmt.Errorf("create bucket of world %s: %w", r.world, err)
				}
				ws.bucket = b
			}
			ws.bucket.FillPercent = 1 // keys only grow: fill pages completely
			for k, rec := range r.records {
				seq := r.expect.Seq + 1 + uint64(k)
				if err := ws.bucket.Put(seqKey(seq), rec); err != nil {
					return -1, fmt.Errorf("world %s: put record %d: %w", r.world, seq, err)
				}
			}
			ws.head = r.next
			ws.dirty = true
		}
		results[i] = appendResult{head: ws.head}
	}
	for name, ws := range worlds {
		if !ws.dirty {
			continue
		}
		if err := ws.bucket.Put(keyHead, encodeHead(ws.head)); err != nil {
			return -1, fmt.Errorf("world %s: put head: %w", name, err)
		}
		if invariants {
			if err := checkTail(name, ws); err != nil {
				return -1, fmt.Errorf("invariant broken after append (a bug): %w", err)
			}
		}
	}
	return -1, nil
}

// loadWorld reads a world's head and checks that its last record is the
// head's seq, so an append never builds on a damaged tail.
func loadWorld(tx *bbolt.Tx, world string) *worldState {
	b := worldBucket(tx, world)
	head, hasHead, err := loadHead(b, world)
	if err != nil {
		return &worldState{err: err}
	}
	if err := checkPresence(world, head, hasHead, b); err != nil {
		return &worldState{err: err}
	}
	ws := &worldState{head: head, bucket: b}
	if invariants && hasHead {
		if err := checkTail(world, ws); err != nil {
			return &worldState{err: err}
		}
	}
	return ws
}

// checkTail decodes a world's last record and checks it against the head.
// It runs only with the invariants build tag (or -race).
func checkTail(world string, ws *worldState) error {
	v := ws.bucket.Get(seqKey(ws.head.Seq))
	if v == nil {
		return corruptf(world, ws.head.Seq, "record %d (the head) is missing", ws.head.Seq)
	}
	rec, err := DecodeRecord(v)
	if err != nil {
		return corruptf(world, ws.head.Seq, "record %d does not decode: %v", ws.head.Seq, err)
	}
	if rec.Seq != ws.head.Seq || rec.Hash != ws.head.Hash {
		return corruptf(world, ws.head.Seq, "record %d (seq %d, %s) is not the head %v", ws.head.Seq, rec.Seq, rec.Hash, ws.head)
	}
	if rec.Seq == 1 && rec.Prev != Genesis(world) {
		return brokenLink(world, 1, rec.Prev, Genesis(world))
	}
	return nil
}

// callFn runs an append's fn, turning a panic into a failed result.
func callFn(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (res appendResult, failed bool) {
	defer func() {
		if p := recover(); p != nil {
			res, failed = appendResult{panicked: true, panicVal: p}, true
		}
	}()
	if err := fn(tx); err != nil {
		return appendResult{err: err}, true
	}
	return appendResult{}, false
}
