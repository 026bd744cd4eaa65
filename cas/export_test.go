package cas

// CorruptMemory changes the bytes m holds under ref, behind its back, so
// that they no longer hash to ref. For the conformance suite.
func CorruptMemory(m *Memory, ref Ref) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.blobs[ref]
	if !ok {
		panic("CorruptMemory: ref not stored: " + ref.String())
	}
	if len(b) == 0 {
		m.blobs[ref] = []byte("not empty any more")
		return
	}
	b = append([]byte(nil), b...)
	b[len(b)/2] ^= 0x01
	m.blobs[ref] = b
}
