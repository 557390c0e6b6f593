package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/internal/durable"
	"github.com/jaco-project/jaco/manager/encryption"
)

// A rekey builds a whole new log sealed with the new key in walDir+".rekey"
// (etcd's wal.Create renames its own temporary directory into place, and
// we append to it afterwards, so that name alone does not mean complete),
// renames it to walDir+".rekeyed" once complete and synced, then swaps it
// with walDir through walDir+".old". recoverRekey, run before every open,
// finishes or forgets an interrupted swap.
func rekeyBuildDir(walDir string) string { return walDir + ".rekey" }
func rekeyedDir(walDir string) string    { return walDir + ".rekeyed" }
func oldWALDir(walDir string) string     { return walDir + ".old" }

// Rekey rewrites everything on disk under sealer: snap (taken at the
// applied index by the caller) as the only snapshot, then a new WAL
// holding that snapshot's record, the hard state last saved (not an older
// one: a stale commit index would make the new snapshot look uncommitted,
// and it would be skipped at open) and ents (the entries after it). The
// old WAL segments and snapshot files, sealed with the data key being
// retired, are deleted; afterwards nothing on disk needs that key.
//
// The caller owns the raft log (the Ready loop, between two Readys, with
// everything before persisted) and must keep the retired key readable
// until Rekey returns: a crash midway leaves either log, both readable
// with a sealer holding both keys.
func (s *Storage) Rekey(sealer *encryption.Sealer, sn raftpb.Snapshot, ents []raftpb.Entry) error {
	s.files.Lock()
	defer s.files.Unlock()
	s.sealer = sealer
	snaps, err := listSorted(s.snapDir, ".snap")
	if err != nil {
		return err
	}
	if err := s.WriteSnapshotFile(sn); err != nil {
		return err
	}
	m := sn.Metadata
	walSnap := walpb.Snapshot{Index: m.Index, Term: m.Term, ConfState: &m.ConfState}
	build := rekeyBuildDir(s.walDir)
	if err := os.RemoveAll(build); err != nil {
		return fmt.Errorf("clear %s: %w", build, err)
	}
	w, err := wal.Create(s.walLog, build, s.metadata)
	if err != nil {
		return fmt.Errorf("create wal %s: %w", build, err)
	}
	err = w.SaveSnapshot(walSnap)
	if err == nil {
		err = w.Save(s.hardState, sealEntries(sealer, ents))
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write rekeyed wal: %w", err)
	}
	if err := os.Rename(build, rekeyedDir(s.walDir)); err != nil {
		return fmt.Errorf("mark rekeyed wal complete: %w", err)
	}
	if err := durable.SyncDir(filepath.Dir(s.walDir)); err != nil {
		return err
	}
	if err := s.wal.Close(); err != nil {
		return fmt.Errorf("close wal %s: %w", s.walDir, err)
	}
	s.wal = nil
	if err := recoverRekey(s.walDir); err != nil {
		return err
	}
	for _, name := range snaps {
		if name == snapFileName(m) {
			continue
		}
		if err := os.Remove(filepath.Join(s.snapDir, name)); err != nil {
			return fmt.Errorf("remove snapshot sealed with the retired key: %w", err)
		}
	}
	if err := durable.SyncDir(s.snapDir); err != nil {
		return err
	}
	// Reopen for appending: ReadAll moves the WAL to its end.
	s.wal, err = wal.Open(s.walLog, s.walDir, walSnap)
	if err != nil {
		return fmt.Errorf("reopen rekeyed wal %s: %w", s.walDir, err)
	}
	if _, _, _, err := s.wal.ReadAll(); err != nil {
		return fmt.Errorf("read rekeyed wal %s: %w", s.walDir, err)
	}
	return nil
}

// recoverRekey completes or discards a rekey cut short, so that walDir is
// the one log to open:
//   - a complete new log (".rekeyed") beside the old one: swap them;
//   - a complete new log and no old one (crash between the two renames):
//     install it;
//   - a partial new log (".rekey"): drop it, the old log is intact;
//   - a leftover old log (".old") beside the installed one: drop it.
func recoverRekey(walDir string) error {
	rekeyed, old := rekeyedDir(walDir), oldWALDir(walDir)
	if err := os.RemoveAll(rekeyBuildDir(walDir)); err != nil {
		return fmt.Errorf("drop partial rekeyed wal: %w", err)
	}
	if exists(rekeyed) {
		if exists(walDir) {
			if err := os.RemoveAll(old); err != nil {
				return fmt.Errorf("clear %s: %w", old, err)
			}
			if err := os.Rename(walDir, old); err != nil {
				return fmt.Errorf("retire old wal: %w", err)
			}
		}
		if err := os.Rename(rekeyed, walDir); err != nil {
			return fmt.Errorf("install rekeyed wal: %w", err)
		}
		if err := durable.SyncDir(filepath.Dir(walDir)); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("remove old wal: %w", err)
	}
	return durable.SyncDir(filepath.Dir(walDir))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

func snapFileName(m raftpb.SnapshotMetadata) string {
	return fmt.Sprintf("%016x-%016x.snap", m.Term, m.Index)
}
