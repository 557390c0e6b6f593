package backup

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/jaco-project/jaco/internal/durable"
)

// fileTime is the UTC time in a scheduled backup's name: fixed width, so
// names sort by time.
const fileTime = "20060102T150405.000Z"

// FileName names the scheduled backup of cluster taken at t holding the
// store at index: jaco-backup-CLUSTER-TIME-INDEX.jbk. Names sort by time
// and never repeat (one index is backed up at most once a millisecond).
func FileName(cluster string, t time.Time, index uint64) string {
	return fmt.Sprintf("jaco-backup-%s-%s-%d.jbk", cluster, t.UTC().Format(fileTime), index)
}

// ownFile matches exactly the names FileName makes for cluster, so that
// pruning never touches another file; ownTemp the temporary files
// writeFile leaves behind when its manager dies mid-write.
func ownFile(cluster string) *regexp.Regexp {
	return regexp.MustCompile(`^` + ownName(cluster) + `$`)
}

func ownTemp(cluster string) *regexp.Regexp {
	return regexp.MustCompile(`^\.` + ownName(cluster) + `\.tmp-[0-9]+$`)
}

func ownName(cluster string) string {
	return `jaco-backup-` + regexp.QuoteMeta(cluster) + `-\d{8}T\d{6}\.\d{3}Z-\d+\.jbk`
}

// writeFile writes a sealed backup into dir (made 0700 if missing) under
// name, 0600, atomically and durably: a temporary file synced, renamed,
// the directory synced. It never replaces a file.
func writeFile(dir, name string, sealed []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("make backup dir: %w", err)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%s exists already (or cannot be checked: %v); backups never replace a file", path, err)
	}
	if err := durable.WriteFile(path, sealed, 0o600); err != nil {
		return "", fmt.Errorf("write backup: %w", err)
	}
	return path, nil
}

// prune removes cluster's scheduled backups in dir beyond the newest keep,
// and the temporary files of writes cut short, and no other file. Called
// after a write by the only writer, it never meets a write in progress.
// It returns the paths removed.
func prune(dir, cluster string, keep int) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list backup dir: %w", err)
	}
	own, temp := ownFile(cluster), ownTemp(cluster)
	var names, stale []string
	for _, e := range entries {
		switch {
		case !e.Type().IsRegular():
		case own.MatchString(e.Name()):
			names = append(names, e.Name())
		case temp.MatchString(e.Name()):
			stale = append(stale, e.Name())
		}
	}
	slices.Sort(names)
	if len(names) > keep {
		stale = append(stale, names[:len(names)-keep]...)
	}
	if len(stale) == 0 {
		return nil, nil
	}
	var removed []string
	for _, name := range stale {
		path := filepath.Join(dir, name)
		if err := os.Remove(path); err != nil {
			return removed, fmt.Errorf("prune old backup: %w", err)
		}
		removed = append(removed, path)
	}
	return removed, durable.SyncDir(dir)
}
