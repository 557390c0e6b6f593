package storage

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// purge removes snapshots beyond the newest keepOld+1, and WAL segments
// that hold only entries covered by the oldest snapshot kept.
func (s *Storage) purge() error {
	snaps, err := listSorted(s.snapDir, ".snap")
	if err != nil {
		return err
	}
	keep := s.keepOld + 1
	if len(snaps) <= keep {
		return nil
	}
	for _, name := range snaps[:len(snaps)-keep] {
		if err := os.Remove(filepath.Join(s.snapDir, name)); err != nil {
			return fmt.Errorf("remove old snapshot: %w", err)
		}
	}
	oldest, err := snapIndex(snaps[len(snaps)-keep])
	if err != nil {
		return err
	}
	segs, err := listSorted(s.walDir, ".wal")
	if err != nil {
		return err
	}
	// Segment i holds entries from its start index up to segment i+1's
	// start; it is needed while that range reaches past oldest.
	for i := 0; i+1 < len(segs); i++ {
		_, next, err := parseSegmentName(segs[i+1])
		if err != nil {
			return err
		}
		if next > oldest {
			break
		}
		if err := os.Remove(filepath.Join(s.walDir, segs[i])); err != nil {
			return fmt.Errorf("remove old wal segment: %w", err)
		}
	}
	return nil
}

func listSorted(dir, suffix string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), suffix) {
			names = append(names, e.Name())
		}
	}
	// Both etcd name formats are fixed-width hex, so byte order is log order.
	slices.Sort(names)
	return names, nil
}

// snapIndex parses "<term>-<index>.snap".
func snapIndex(name string) (uint64, error) {
	var term, index uint64
	if _, err := fmt.Sscanf(name, "%016x-%016x.snap", &term, &index); err != nil {
		return 0, fmt.Errorf("parse snapshot name %q: %w", name, err)
	}
	return index, nil
}
