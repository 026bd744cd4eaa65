package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"

	"go.etcd.io/bbolt"

	"github.com/demiurge-dev/demiurge/cas"
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
	step    []byte   // the step header (see encodeStep); nil without entries
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
	j.pubMu.Lock()
	j.commits++
	j.inCommit = true
	j.pubMu.Unlock()
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
	if testHookBeforePublish != nil {
		testHookBeforePublish()
	}
	j.publish(group, results)
	for i, r := range group {
		r.done <- results[i]
	}
	j.nAppends.Add(uint64(len(group)))
}

// testHookBeforePublish, if set (by tests), runs once a group's
// transactions have committed and before publish: the file then shows
// records that Committed must not show yet.
var testHookBeforePublish func()

// publish makes the heads the group's successful appends made durable
// visible to Committed, and wakes whoever waits on Changed. It runs once
// every transaction of the group has committed (fsync included), before
// any append of the group is acknowledged.
func (j *Bolt) publish(group []*appendReq, results []appendResult) {
	j.pubMu.Lock()
	for i, r := range group {
		if res := results[i]; res.err == nil && !res.panicked && res.head.Seq > j.committed[r.world].Seq {
			j.committed[r.world] = res.head
		}
	}
	j.inCommit = false
	if j.changed != nil {
		close(j.changed)
		j.changed = nil
	}
	j.pubMu.Unlock()
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
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		// bbolt can panic on a damaged file; Update has rolled back.
		if p := recover(); p != nil {
			culprit, err = -1, cas.BoltDamage(j.db, p)
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
	head  Head
	pos   uint64 // position of the world's last step; 0 if it has none
	err   error  // the world's stored state is unusable
	dirty bool   // head moved: write it back
}

func applyGroup(tx *bbolt.Tx, group []*appendReq, live []int, results []appendResult) (int, error) {
	worlds := make(map[string]*worldState, 1)
	var order []string // worlds in first-touched order, for deterministic writes
	w := &logWriter{tx: tx}
	for _, i := range live {
		r := group[i]
		ws := worlds[r.world]
		if ws == nil {
			ws = loadWorld(tx, r.world)
			worlds[r.world] = ws
			order = append(order, r.world)
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
			if err := w.putStep(r.world, ws, r.expect.Seq+1, r.step, r.records); err != nil {
				return -1, err
			}
			ws.head = r.next
		}
		results[i] = appendResult{head: ws.head}
	}
	for _, name := range order {
		ws := worlds[name]
		if !ws.dirty {
			continue
		}
		if err := w.putHead(name, ws); err != nil {
			return -1, err
		}
		if invariants {
			if err := checkTail(tx, name, ws); err != nil {
				return -1, fmt.Errorf("invariant broken after append (a bug): %w", err)
			}
		}
	}
	return -1, nil
}

// logWriter appends steps to the log in one write transaction.
type logWriter struct {
	tx           *bbolt.Tx
	log, anchors *bbolt.Bucket // nil until the first write
	next         uint64        // the next free position
}

func (w *logWriter) init() error {
	if w.log != nil {
		return nil
	}
	w.log, w.anchors = w.tx.Bucket(bucketLog), w.tx.Bucket(bucketAnchors)
	if w.log == nil || w.anchors == nil {
		return errors.New("journal buckets are missing")
	}
	w.log.FillPercent = 1 // positions only grow: fill pages completely
	// The last key before the head entries is the last step's header or
	// one of its records; both start with its position.
	c := w.log.Cursor()
	k, _ := c.Seek([]byte{headMark})
	if k != nil {
		k, _ = c.Prev()
	} else {
		k, _ = c.Last()
	}
	w.next = 1
	if k != nil {
		if len(k) != 8 && len(k) != 12 {
			return corruptf("", 0, "the last key of the log, %x, is not a position", k)
		}
		w.next = binary.BigEndian.Uint64(k) + 1
	}
	if w.next > maxPos {
		return corruptf("", 0, "the log is full: position %d", w.next)
	}
	return nil
}

// putStep writes the step header step and its records (of world, from seq
// first) at the next position, linked to the world's step before it, and
// its anchor if it gets one. It moves ws.pos, not ws.head.
func (w *logWriter) putStep(world string, ws *worldState, first uint64, step []byte, records [][]byte) error {
	if err := w.init(); err != nil {
		return err
	}
	pos := w.next
	setStepPrev(step, ws.pos) // the header is this append's own buffer
	if err := w.log.Put(posKey(pos), step); err != nil {
		return fmt.Errorf("world %s: put step at position %d: %w", world, pos, err)
	}
	for i, rec := range records {
		if err := w.log.Put(recordKey(pos, uint32(i)), rec); err != nil {
			return fmt.Errorf("world %s: put record %d: %w", world, first+uint64(i), err)
		}
	}
	if anchored(first, first+uint64(len(records))-1) {
		if err := w.anchors.Put(anchorKey(world, first), posKey(pos)); err != nil {
			return fmt.Errorf("world %s: put anchor of seq %d: %w", world, first, err)
		}
	}
	w.next++
	ws.pos = pos
	ws.dirty = true
	return nil
}

// putHead writes the world's head entry.
func (w *logWriter) putHead(world string, ws *worldState) error {
	if err := w.init(); err != nil {
		return err
	}
	if err := w.log.Put(headKey(world), encodeWorldHead(worldHead{head: ws.head, pos: ws.pos})); err != nil {
		return fmt.Errorf("world %s: put head: %w", world, err)
	}
	return nil
}

// loadWorld reads a world's head and checks that its last step ends at the
// head's seq, so an append never builds on a damaged tail.
func loadWorld(tx *bbolt.Tx, world string) *worldState {
	wh, ok, err := loadWorldHead(tx, world)
	if err != nil {
		return &worldState{err: err}
	}
	if !ok {
		return &worldState{}
	}
	if err := checkTailStep(tx, world, wh); err != nil {
		return &worldState{err: err}
	}
	ws := &worldState{head: wh.head, pos: wh.pos}
	if invariants {
		if err := checkTail(tx, world, ws); err != nil {
			return &worldState{err: err}
		}
	}
	return ws
}

// checkTail decodes a world's last record and checks it against the head.
// It runs only with the invariants build tag (or -race).
func checkTail(tx *bbolt.Tx, world string, ws *worldState) error {
	log := tx.Bucket(bucketLog)
	h, err := getStep(log, ws.pos)
	if err != nil {
		return corruptf(world, ws.head.Seq, "the head's step: %v", err)
	}
	var last []byte
	if err := stepRecords(log.Cursor(), ws.pos, h, func(_ uint64, v []byte) error { last = v; return nil }); err != nil {
		return corruptf(world, ws.head.Seq, "the head's step at position %d: %v", ws.pos, err)
	}
	rec, err := DecodeRecord(last)
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
