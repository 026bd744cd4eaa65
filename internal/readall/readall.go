// Package readall reads bounded: a body whose length is declared up front
// (an HTTP request or response with Content-Length) in one allocation,
// where io.ReadAll would start small and double (Sized), and a file a
// user named (File, Open), refused unless it is a regular file under a
// bound, so that a FIFO never blocks a command and /dev/zero never fills
// its memory.
package readall

import "io"

// Sized reads r to its end. size is the length r declares (-1 or 0 when
// unknown): the buffer is made that large plus one byte, so a body of the
// declared length is read without growing it and its end is seen without
// another allocation. A body longer than declared is read whole all the
// same; one shorter is returned as it is. Like io.ReadAll, Sized returns
// what it read along with the error that stopped it, and nil at io.EOF.
func Sized(r io.Reader, size int64) ([]byte, error) {
	const maxHint = 64 << 20 // do not trust a declared size beyond this
	if size <= 0 || size > maxHint {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than declared: grow
		}
	}
}
