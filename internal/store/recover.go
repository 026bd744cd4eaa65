package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/demiurge-dev/demiurge/cas"
)

// Recovery is what Recover did.
type Recovery = cas.MetaRecovery

// Recover makes usable again the store in dir, whose file Open refuses
// for a damaged meta page (an error that errors.Is cas.ErrMetaDamaged):
// it keeps a copy of the file as it is (FileName + ".damaged-" and the
// time, beside it), then goes on from the state the other meta page
// holds, losing the commit a damaged newer page held, if it held one (see
// cas.RecoverBoltMeta). A store whose meta pages are whole is left alone
// (an error wrapping cas.ErrNoMetaDamage); one damaged elsewhere too is
// refused and left as it was. It takes the store's lock as a writer does,
// waiting up to timeout (0: DefaultLockTimeout).
func Recover(dir string, timeout time.Duration) (*Recovery, error) {
	if IsURL(dir) {
		return nil, errors.New("recover: a PostgreSQL store has no meta pages to recover; it is damaged only as its rows are, which its own backups restore")
	}
	if timeout == 0 {
		timeout = DefaultLockTimeout
	}
	path := filepath.Join(dir, FileName)
	switch st, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w at %s: %s not found", ErrNotExist, dir, path)
	case err != nil:
		return nil, fmt.Errorf("recover store %s: %w", dir, err)
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("recover store %s: %s is not a regular file", dir, path)
	}
	release, err := holdInProcess(path, false, timeout)
	if err != nil {
		return nil, fmt.Errorf("recover store %s: %w", dir, err)
	}
	defer release()
	keep := path + ".damaged-" + time.Now().UTC().Format("20060102T150405.000Z")
	rec, err := cas.RecoverBoltMeta(path, keep, timeout)
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return nil, lockedBy("recover store", dir, timeout)
		}
		return nil, fmt.Errorf("recover store %s: %w", dir, err)
	}
	return rec, nil
}
