package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"go.etcd.io/etcd/server/v3/etcdserver/api/snap"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"

	"github.com/jaco-project/jaco/internal/durable"
	"github.com/jaco-project/jaco/internal/zapslog"
	"github.com/jaco-project/jaco/manager/encryption"
)

// ErrNoState is returned by Open when dir holds no raft log.
var ErrNoState = errors.New("no raft state")

// State is what Open read back.
type State struct {
	// Metadata is the WAL metadata record written at Bootstrap.
	Metadata  []byte
	HardState raftpb.HardState
	// Snapshot is the newest usable snapshot, opened; empty when none.
	Snapshot raftpb.Snapshot
	// Entries follow the snapshot, opened.
	Entries []raftpb.Entry
}

// Storage is an open raft log and snapshot directory. It is used by one
// goroutine, the raft node's Ready loop, but for WriteSnapshotFile and
// ReadSnapshot.
type Storage struct {
	walDir, snapDir string
	wal             *wal.WAL
	snapshotter     *snap.Snapshotter
	// files guards, against ReadSnapshot on another goroutine, the
	// snapshot files purge and Rekey remove and the sealer Rekey
	// replaces.
	files     sync.Mutex
	sealer    *encryption.Sealer
	metadata  []byte           // the WAL metadata record, copied into a rekeyed log
	hardState raftpb.HardState // as last persisted, copied into a rekeyed log
	keepOld   int
	log       *slog.Logger
	walLog    *zap.Logger // etcd's WAL reports through it (component=wal)
}

// Options tune Open.
type Options struct {
	// KeepOldSnapshots is how many snapshots to keep besides the newest
	// (with the log entries that follow them).
	KeepOldSnapshots int
	// Logger gets Open's own records and, through internal/zapslog, what
	// etcd's WAL and snapshotter report (component wal and snapshot): a
	// repaired tail, a slow fdatasync, a broken snapshot file set aside.
	Logger *slog.Logger
}

func walDir(dir string) string  { return filepath.Join(dir, "wal") }
func snapDir(dir string) string { return filepath.Join(dir, "snap") }

// Exists reports whether dir holds a raft log (or a rekeyed one waiting to
// be installed, see rekey.go).
func Exists(dir string) bool {
	return wal.Exist(walDir(dir)) || wal.Exist(rekeyedDir(walDir(dir)))
}

// Bootstrap creates the log of a new member in dir with metadata and its
// first entries and hard state, atomically.
func Bootstrap(dir string, sealer *encryption.Sealer, metadata []byte, hs raftpb.HardState, ents []raftpb.Entry) error {
	if Exists(dir) {
		return fmt.Errorf("bootstrap %s: raft log already exists", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create raft dir: %w", err)
	}
	tmp := walDir(dir) + ".bootstrap"
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("clear %s: %w", tmp, err)
	}
	// Quiet: every failure of a bootstrap comes back as an error, and the
	// rest etcd says about a fresh log (temporary directories) is noise.
	w, err := wal.Create(zap.NewNop(), tmp, metadata)
	if err != nil {
		return fmt.Errorf("create wal %s: %w", tmp, err)
	}
	if err := w.Save(hs, sealEntries(sealer, ents)); err != nil {
		w.Close()
		return fmt.Errorf("write bootstrap entries: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("close wal %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, walDir(dir)); err != nil {
		return fmt.Errorf("install wal: %w", err)
	}
	return durable.SyncDir(dir)
}

// Open opens the raft state in dir and reads it back.
func Open(dir string, sealer *encryption.Sealer, opts Options) (*Storage, *State, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	if !Exists(dir) {
		return nil, nil, ErrNoState
	}
	s := &Storage{
		walDir:  walDir(dir),
		snapDir: snapDir(dir),
		sealer:  sealer,
		keepOld: opts.KeepOldSnapshots,
		log:     log,
		walLog:  zapslog.New(log.With("component", "wal").Handler()),
	}
	if err := recoverRekey(s.walDir); err != nil {
		return nil, nil, err
	}
	// Read the whole log before writing anything: a refused start leaves
	// every file as it found it.
	scan, err := scanWAL(s.walDir)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(s.snapDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("create snap dir: %w", err)
	}
	s.snapshotter = snap.New(zapslog.New(log.With("component", "snapshot").Handler()), s.snapDir)

	st := &State{}
	loaded, err := s.snapshotter.LoadNewestAvailable(scan.committedSnapshots())
	switch {
	case errors.Is(err, snap.ErrNoSnapshot):
	case err != nil:
		return nil, nil, fmt.Errorf("load snapshot from %s: %w", s.snapDir, err)
	default:
		if err := openSnapshot(sealer, loaded); err != nil {
			return nil, nil, fmt.Errorf("snapshot in %s: %w", s.snapDir, err)
		}
		st.Snapshot = *loaded
	}
	if err := scan.checkCommitKept(st.Snapshot.Metadata.Index); err != nil {
		return nil, nil, err
	}
	if scan.torn {
		// A crash mid-write: the record was never synced, so never
		// acknowledged.
		log.Warn("wal ends in a torn record; cutting it off", "segment", scan.lastSegment, "offset", scan.tornAt)
		if !wal.Repair(s.walLog, s.walDir) {
			return nil, nil, fmt.Errorf("cut the torn record at offset %d of %s", scan.tornAt, scan.lastSegment)
		}
	}
	if err := s.openWAL(st); err != nil {
		return nil, nil, err
	}
	if err := openEntries(sealer, st.Entries); err != nil {
		s.wal.Close()
		return nil, nil, fmt.Errorf("wal %s: %w", s.walDir, err)
	}
	return s, st, nil
}

// openWAL opens the WAL at the loaded snapshot for appending and reads it.
func (s *Storage) openWAL(st *State) error {
	m := st.Snapshot.Metadata
	walSnap := walpb.Snapshot{Index: m.Index, Term: m.Term}
	if !raft.IsEmptySnap(st.Snapshot) {
		walSnap.ConfState = &m.ConfState
	}
	w, err := wal.Open(s.walLog, s.walDir, walSnap)
	if err != nil {
		return fmt.Errorf("open wal %s: %w", s.walDir, err)
	}
	meta, hs, ents, err := w.ReadAll()
	if err != nil {
		w.Close()
		return fmt.Errorf("read wal %s: %w", s.walDir, err)
	}
	s.wal = w
	s.metadata, s.hardState = meta, hs
	st.Metadata, st.HardState, st.Entries = meta, hs, ents
	return nil
}

// Save persists hs and ents durably before returning.
func (s *Storage) Save(hs raftpb.HardState, ents []raftpb.Entry) error {
	if err := s.wal.Save(hs, sealEntries(s.sealer, ents)); err != nil {
		return fmt.Errorf("save to wal %s: %w", s.walDir, err)
	}
	if !raft.IsEmptyHardState(hs) {
		s.hardState = hs
	}
	return nil
}

// SaveSnapshot persists snap (file first, then its WAL record) and drops
// snapshots and WAL segments no longer needed.
func (s *Storage) SaveSnapshot(sn raftpb.Snapshot) error {
	if err := s.WriteSnapshotFile(sn); err != nil {
		return err
	}
	return s.RecordSnapshot(sn.Metadata)
}

// RecordSnapshot is the second half of SaveSnapshot: it records the
// snapshot whose file WriteSnapshotFile wrote in the WAL, making it the
// one Open starts from, and drops snapshots and WAL segments no longer
// needed. The WAL may hold entries past m.Index already.
func (s *Storage) RecordSnapshot(m raftpb.SnapshotMetadata) error {
	cs := m.ConfState
	if err := s.wal.SaveSnapshot(walpb.Snapshot{Index: m.Index, Term: m.Term, ConfState: &cs}); err != nil {
		return fmt.Errorf("record snapshot %d in wal %s: %w", m.Index, s.walDir, err)
	}
	if err := s.wal.ReleaseLockTo(m.Index); err != nil {
		return fmt.Errorf("release wal segments before %d: %w", m.Index, err)
	}
	s.files.Lock()
	defer s.files.Unlock()
	return s.purge()
}

// ReadSnapshot reads back the data of the snapshot m describes, opened:
// one the WAL records (SaveSnapshot, RecordSnapshot, Rekey), or was found
// at Open. It may run on any goroutine: the raft node keeps only the
// newest snapshot's metadata in memory and reads the data when a follower
// needs it (docs/design.md §5).
func (s *Storage) ReadSnapshot(m raftpb.SnapshotMetadata) ([]byte, error) {
	s.files.Lock()
	defer s.files.Unlock()
	sn, err := readSnapFile(filepath.Join(s.snapDir, snapFileName(m)))
	if err != nil {
		return nil, fmt.Errorf("read snapshot %d: %w", m.Index, err)
	}
	if sn.Metadata.Index != m.Index || sn.Metadata.Term != m.Term {
		return nil, fmt.Errorf("read snapshot %d: the file holds %d (term %d)", m.Index, sn.Metadata.Index, sn.Metadata.Term)
	}
	if err := openSnapshot(s.sealer, &sn); err != nil {
		return nil, err
	}
	return sn.Data, nil
}

// WriteSnapshotFile is the first half of SaveSnapshot: it seals sn and
// writes its file, synced. Unlike every other method it may run on
// another goroutine than the Storage's own, beside Save, so the Ready loop
// need not wait while a large state is written; not beside Rekey,
// SaveSnapshot or another WriteSnapshotFile. Until RecordSnapshot the file
// is not used: Open takes only snapshots the WAL records.
func (s *Storage) WriteSnapshotFile(sn raftpb.Snapshot) error {
	if err := writeSnapFile(s.snapDir, sealSnapshot(s.sealer, sn)); err != nil {
		return fmt.Errorf("save snapshot in %s: %w", s.snapDir, err)
	}
	return nil
}

// Close closes the WAL.
func (s *Storage) Close() error {
	if s.wal == nil {
		return nil // a failed Rekey closed it
	}
	if err := s.wal.Close(); err != nil {
		return fmt.Errorf("close wal %s: %w", s.walDir, err)
	}
	return nil
}
