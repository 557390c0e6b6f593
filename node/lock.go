package node

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/jaco-project/jaco/internal/datadir"
)

// ErrDataDirInUse is returned when another jacod holds the data dir.
var ErrDataDirInUse = errors.New("data dir is in use by another jacod")

// dirLock is an exclusive advisory lock on a data dir. The kernel drops it
// when the process dies, so a killed jacod never leaves a stale lock.
type dirLock struct{ f *os.File }

func lockDataDir(dir string) (*dirLock, error) {
	path := datadir.Dir(dir).Lock()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (held by pid %s)", ErrDataDirInUse, dir, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The pid is only for the message above; the flock is the lock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() error {
	return l.f.Close()
}
