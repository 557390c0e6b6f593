package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/etcd/server/v3/storage/wal/walpb"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/manager/encryption"
)

// fuzzSealer has a fixed key, so that records sealed for the seeds open
// in every fuzz worker.
func fuzzSealer(tb testing.TB) *encryption.Sealer {
	var k encryption.Key
	copy(k[:], "a fixed raft log key for fuzzing")
	s, err := encryption.NewSealer(k)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// segmentName is the name of a log's first WAL segment.
const segmentName = "0000000000000000-0000000000000000.wal"

// validSegment is the first segment of a freshly bootstrapped log holding
// a few sealed entries, cut where its records end (etcd preallocates
// segments with zeroes).
func validSegment(tb testing.TB, sealer *encryption.Sealer) []byte {
	dir := tb.TempDir()
	if err := Bootstrap(dir, sealer, []byte("meta"), raftpb.HardState{Term: 1, Commit: 3}, entries(1, 3, 1)); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(walDir(dir), segmentName)
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data[:recordsEnd(tb, path)]
}

// openOneSegment opens a log whose only WAL segment holds seg and returns
// how many entries it read; ok is false when Open refused it.
func openOneSegment(t *testing.T, sealer *encryption.Sealer, seg []byte) (entries int, ok bool) {
	dir := t.TempDir()
	if err := os.MkdirAll(walDir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(walDir(dir), segmentName), seg, 0o600); err != nil {
		t.Fatal(err)
	}
	s, st, err := Open(dir, sealer, quiet)
	if err != nil {
		return 0, false
	}
	s.Close()
	return len(st.Entries), true
}

// FuzzOpenSegment: a log whose only WAL segment holds arbitrary bytes
// (a damaged disk, a hostile file) opens, or is refused with an error;
// it never panics, and never yields more entries than the bytes could
// hold.
func FuzzOpenSegment(f *testing.F) {
	sealer := fuzzSealer(f)
	seg := validSegment(f, sealer)
	f.Add(seg)
	f.Add(seg[:len(seg)-3])
	f.Add(seg[:len(seg)/2])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, seg []byte) {
		if n, ok := openOneSegment(t, sealer, seg); ok && n > len(seg) {
			t.Fatalf("%d entries from a %d-byte segment", n, len(seg))
		}
	})
}

// FuzzOpenSealed: the data of an entry or snapshot read from disk opens
// only if it was sealed with the key at that kind and position; anything
// else is ErrOpen, never a panic. Valid data round-trips.
func FuzzOpenSealed(f *testing.F) {
	sealer := fuzzSealer(f)
	sealed := sealEntries(sealer, entries(7, 7, 2))[0].Data
	f.Add(sealed, uint64(7), uint64(2), false)
	f.Add(sealSnapshot(sealer, raftpb.Snapshot{Data: []byte("snap"), Metadata: raftpb.SnapshotMetadata{Index: 7, Term: 2}}).Data,
		uint64(7), uint64(2), true)
	f.Add(sealed[:len(sealed)-1], uint64(7), uint64(2), false)
	f.Add([]byte{}, uint64(0), uint64(0), true)
	f.Fuzz(func(t *testing.T, data []byte, index, term uint64, snapshot bool) {
		var err error
		if snapshot {
			sn := raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{Index: index, Term: term}}
			err = openSnapshot(sealer, &sn)
		} else {
			ents := []raftpb.Entry{{Index: index, Term: term, Data: data}}
			err = openEntries(sealer, ents)
		}
		if err != nil && !errors.Is(err, encryption.ErrOpen) {
			t.Fatalf("open error %v does not wrap encryption.ErrOpen", err)
		}
		ents := []raftpb.Entry{{Index: index, Term: term, Data: append([]byte{1}, data...)}}
		want := string(ents[0].Data)
		ents = sealEntries(sealer, ents)
		if err := openEntries(sealer, ents); err != nil || string(ents[0].Data) != want {
			t.Fatalf("seal/open does not round-trip: %v", err)
		}
	})
}

// encodeSegment frames records as etcd's WAL encoder does, checksums
// included, behind the CRC and metadata records every segment begins with.
// Each record of recs is a type byte, a length byte and that many bytes of
// data; a short tail is dropped.
func encodeSegment(recs []byte) []byte {
	table := crc32.MakeTable(crc32.Castagnoli)
	var out []byte
	crc := uint32(0)
	add := func(typ int64, data []byte) {
		if typ != wal.CrcType {
			crc = crc32.Update(crc, table, data)
		}
		rec := walpb.Record{Type: typ, Crc: crc, Data: data}
		b, err := rec.Marshal()
		if err != nil {
			panic(err) // a Record of plain fields always marshals
		}
		length := uint64(len(b))
		if pad := (8 - len(b)%8) % 8; pad != 0 {
			length |= uint64(0x80|pad) << 56
			b = append(b, make([]byte, pad)...)
		}
		out = binary.LittleEndian.AppendUint64(out, length)
		out = append(out, b...)
	}
	add(wal.CrcType, nil)
	add(wal.MetadataType, []byte("meta"))
	for len(recs) >= 2 && len(recs) >= 2+int(recs[1]) {
		add(int64(recs[0]%6), recs[2:2+int(recs[1])])
		recs = recs[2+int(recs[1]):]
	}
	return out
}

// appendRecord is the encodeSegment form of one record.
func appendRecord(tb testing.TB, recs []byte, typ int64, m interface{ Marshal() ([]byte, error) }) []byte {
	data, err := m.Marshal()
	if err != nil || len(data) > 255 {
		tb.Fatalf("record of %d bytes: %v", len(data), err)
	}
	return append(append(slices.Clip(recs), byte(typ), byte(len(data))), data...)
}

// FuzzOpenRecords: a log whose records have valid checksums but arbitrary
// content (entries, hard states, snapshot records, in any order) opens or
// is refused with an error; never a panic. This reaches what the
// checksums keep FuzzOpenSegment from.
func FuzzOpenRecords(f *testing.F) {
	sealer := fuzzSealer(f)
	var recs []byte
	for _, e := range sealEntries(sealer, entries(1, 3, 1)) {
		recs = appendRecord(f, recs, wal.EntryType, &e)
	}
	recs = appendRecord(f, recs, wal.StateType, &raftpb.HardState{Term: 1, Commit: 3})
	f.Add(recs)
	f.Add(appendRecord(f, recs, wal.StateType, &raftpb.HardState{Term: 1, Commit: 9}))
	f.Add(appendRecord(f, recs, wal.SnapshotType, &walpb.Snapshot{Index: 2, Term: 1}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, recs []byte) {
		if n, ok := openOneSegment(t, sealer, encodeSegment(recs)); ok && n > len(recs) {
			t.Fatalf("%d entries from %d bytes of records", n, len(recs))
		}
	})
}
