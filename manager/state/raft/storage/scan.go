package storage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"
)

// ErrDamaged is returned by Open when the log holds damage a crash cannot
// explain. Open has changed no file when it returns it.
var ErrDamaged = errors.New("raft log damaged")

// ErrLostAcknowledged is returned by Open when the log, once a torn last
// record is cut off, would end before an index this member had recorded
// as committed: entries it acknowledged are gone. Open has changed no file
// when it returns it. The raft member returns it too when its leader counts
// on entries the log no longer holds.
var ErrLostAcknowledged = errors.New("this member lost raft entries it had acknowledged")

// walScan is what a read-only pass over every WAL segment found, as the
// log would read once a torn last record is cut off.
type walScan struct {
	hardState raftpb.HardState // the last hard state record
	lastEntry uint64           // index of the last entry record, 0 if none
	snapshots []walpb.Snapshot // the snapshot records, in log order
	// lastSegment is the path of the segment the log ends in.
	lastSegment string
	// torn is set when lastSegment ends in a record cut short; tornAt is
	// the offset where the last whole record ends, where Repair cuts.
	torn   bool
	tornAt int64
}

// Every segment etcd's WAL writes begins with a CRC record and a metadata
// record, and is synced before it gets its final name, so a crash never
// leaves a segment without them.
const headerRecords = 2

// scanWAL reads every segment in dir without writing anything. A record cut
// short at the very end of the last segment is what a crash mid-write
// leaves, and is reported as torn; any other damage (a bad checksum, a
// record cut short in an earlier segment, an empty or header-less segment,
// a missing segment) is an ErrDamaged error naming the file and offset.
// It checks what etcd's ReadAll checks, and records no more than Open
// needs to decide before writing: ReadAll reads the entries afterwards.
func scanWAL(dir string) (*walScan, error) {
	names, err := segmentNames(dir)
	if err != nil {
		return nil, err
	}
	sc := &walScan{}
	var (
		metadata []byte
		prevCRC  uint32
		prevSeq  uint64
	)
	for i, name := range names {
		path := filepath.Join(dir, name)
		seq, _, err := parseSegmentName(name)
		if err != nil {
			return nil, err
		}
		if i > 0 && seq != prevSeq+1 {
			return nil, damaged(path, 0, fmt.Errorf("segment follows %s: segments between them are missing", names[i-1]))
		}
		prevSeq = seq
		last := i == len(names)-1
		crc, err := sc.scanSegment(path, last, prevCRC, &metadata)
		if err != nil {
			return nil, err
		}
		prevCRC = crc
		sc.lastSegment = path
	}
	return sc, nil
}

// scanSegment reads one segment whose predecessor ended with prevCRC and
// returns the running CRC at its end. metadata is the metadata record seen
// so far; every segment must repeat it.
func (sc *walScan) scanSegment(path string, last bool, prevCRC uint32, metadata *[]byte) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("open wal segment: %w", err)
	}
	defer f.Close()
	dec := wal.NewDecoder(fileutil.NewFileReader(f))
	var rec walpb.Record
	for n := 0; ; n++ {
		err := dec.Decode(&rec)
		off := dec.LastOffset()
		switch {
		case errors.Is(err, io.EOF):
			if n < headerRecords {
				return 0, damaged(path, off, errors.New("segment is empty or its header is incomplete"))
			}
			return dec.LastCRC(), nil
		case errors.Is(err, io.ErrUnexpectedEOF) && last && n >= headerRecords:
			sc.torn, sc.tornAt = true, off
			return dec.LastCRC(), nil
		case err != nil:
			return 0, damaged(path, off, err)
		}
		if want := [headerRecords]int64{wal.CrcType, wal.MetadataType}; n < headerRecords && rec.Type != want[n] {
			return 0, damaged(path, off, fmt.Errorf("record %d of the segment has type %d, want %d", n, rec.Type, want[n]))
		}
		if err := sc.record(&rec, dec, prevCRC, metadata); err != nil {
			return 0, damaged(path, off, err)
		}
	}
}

// record takes in one decoded record.
func (sc *walScan) record(rec *walpb.Record, dec wal.Decoder, prevCRC uint32, metadata *[]byte) error {
	switch rec.Type {
	case wal.CrcType:
		// The first segment starts from a CRC of 0; every later one
		// carries on its predecessor's.
		if prevCRC != 0 && rec.Validate(prevCRC) != nil {
			return fmt.Errorf("%w: the segment does not continue its predecessor", wal.ErrCRCMismatch)
		}
		dec.UpdateCRC(rec.Crc)
	case wal.MetadataType:
		if *metadata != nil && !bytes.Equal(*metadata, rec.Data) {
			return wal.ErrMetadataConflict
		}
		*metadata = rec.Data
	case wal.EntryType:
		var e raftpb.Entry
		if err := e.Unmarshal(rec.Data); err != nil {
			return fmt.Errorf("decode entry record: %w", err)
		}
		sc.lastEntry = e.Index
	case wal.StateType:
		var hs raftpb.HardState
		if err := hs.Unmarshal(rec.Data); err != nil {
			return fmt.Errorf("decode hard state record: %w", err)
		}
		sc.hardState = hs
	case wal.SnapshotType:
		var s walpb.Snapshot
		if err := s.Unmarshal(rec.Data); err != nil {
			return fmt.Errorf("decode snapshot record: %w", err)
		}
		sc.snapshots = append(sc.snapshots, s)
	default:
		return fmt.Errorf("unknown record type %d", rec.Type)
	}
	return nil
}

// committedSnapshots are the snapshot records at or below the commit
// index: a snapshot file for a later one may have been written before the
// crash that cut its commit off, and must not be loaded.
func (sc *walScan) committedSnapshots() []walpb.Snapshot {
	var out []walpb.Snapshot
	for _, s := range sc.snapshots {
		if s.Index <= sc.hardState.Commit {
			out = append(out, s)
		}
	}
	return out
}

// checkCommitKept refuses a log that would end before its own commit
// index, given the index of the snapshot it starts from.
func (sc *walScan) checkCommitKept(snapIndex uint64) error {
	last := max(sc.lastEntry, snapIndex)
	if sc.hardState.Commit <= last {
		return nil
	}
	where := fmt.Sprintf("the raft log ends at index %d in %s", last, sc.lastSegment)
	if sc.torn {
		where = fmt.Sprintf("the raft log would end at index %d once the torn record at offset %d of %s is cut off",
			last, sc.tornAt, sc.lastSegment)
	}
	return fmt.Errorf("%w: %s, but this member had acknowledged entries up to index %d (its commit index); nothing was changed",
		ErrLostAcknowledged, where, sc.hardState.Commit)
}

func damaged(path string, off int64, cause error) error {
	return fmt.Errorf("%w: %s at offset %d: %w", ErrDamaged, path, off, cause)
}

// segmentNames lists dir's WAL segments in log order. Like etcd, it skips
// files whose names are not segment names.
func segmentNames(dir string) ([]string, error) {
	names, err := listSorted(dir, ".wal")
	if err != nil {
		return nil, err
	}
	segs := names[:0]
	for _, name := range names {
		if _, _, err := parseSegmentName(name); err == nil {
			segs = append(segs, name)
		}
	}
	if len(segs) == 0 {
		return nil, fmt.Errorf("%w: no wal segment in %s", ErrDamaged, dir)
	}
	return segs, nil
}

// parseSegmentName parses "<seq>-<index>.wal".
func parseSegmentName(name string) (seq, index uint64, err error) {
	if _, err := fmt.Sscanf(name, "%016x-%016x.wal", &seq, &index); err != nil {
		return 0, 0, fmt.Errorf("parse wal segment name %q: %w", name, err)
	}
	return seq, index, nil
}
