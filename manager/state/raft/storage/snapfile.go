package storage

import (
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/jaco-project/jaco/internal/durable"
)

// snapCRC is the checksum etcd's snapshotter writes and checks on load.
var snapCRC = crc32.MakeTable(crc32.Castagnoli)

// writeSnapFile writes sn, already sealed, to dir as <term>-<index>.snap,
// byte for byte as etcd's snapshotter does (so its Load reads it), with
// two differences (docs/adr/0045): the sealed data is written between its
// small framing headers instead of being copied into one more buffer with
// them (a copy of the whole state, 49 MB for 440 000 objects), and the
// file is written under a temporary name, renamed and its directory
// synced, so a crash leaves no torn .snap and a snapshot the WAL records
// has its directory entry on disk.
//
// The layout, as the snapshotter's Marshal calls make it: a
// snappb.Snapshot {crc = 1; data = 2} whose data is a raftpb.Snapshot
// {data = 1; metadata = 2}, and crc the CRC-32C of those data.
func writeSnapFile(dir string, sn raftpb.Snapshot) error {
	meta, err := sn.Metadata.Marshal()
	if err != nil {
		return fmt.Errorf("encode snapshot metadata: %w", err)
	}
	// The raftpb.Snapshot around the sealed data: its header, then the
	// data, then the metadata field.
	inner := protowire.AppendTag(nil, 1, protowire.BytesType)
	inner = protowire.AppendVarint(inner, uint64(len(sn.Data)))
	tail := protowire.AppendTag(nil, 2, protowire.BytesType)
	tail = protowire.AppendBytes(tail, meta)
	size := len(inner) + len(sn.Data) + len(tail)
	crc := crc32.Update(0, snapCRC, inner)
	crc = crc32.Update(crc, snapCRC, sn.Data)
	crc = crc32.Update(crc, snapCRC, tail)
	outer := protowire.AppendTag(nil, 1, protowire.VarintType)
	outer = protowire.AppendVarint(outer, uint64(crc))
	outer = protowire.AppendTag(outer, 2, protowire.BytesType)
	outer = protowire.AppendVarint(outer, uint64(size))
	head := append(outer, inner...)
	return durable.WriteFileParts(filepath.Join(dir, snapFileName(sn.Metadata)), 0o600, head, sn.Data, tail)
}

// readSnapFile reads a snapshot file as writeSnapFile and etcd's
// snapshotter write it, checking its CRC, and returns the snapshot with
// Data a slice of the file's bytes: etcd's snap.Read decodes the two
// messages with a copy of the data each, three copies of the state in
// all where one will do (the leader reads the newest snapshot back each
// time a follower needs it, snapsend.go).
func readSnapFile(path string) (raftpb.Snapshot, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return raftpb.Snapshot{}, err
	}
	var (
		crc, hasCRC = uint64(0), false
		inner       []byte
	)
	err = eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, varint uint64) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			crc, hasCRC = varint, true
		case num == 2 && typ == protowire.BytesType:
			inner = v
		}
		return nil
	})
	switch {
	case err != nil:
		return raftpb.Snapshot{}, fmt.Errorf("%s: %w", path, err)
	case !hasCRC || inner == nil:
		return raftpb.Snapshot{}, fmt.Errorf("%s: not a snapshot file (no checksum or data)", path)
	case crc32.Checksum(inner, snapCRC) != uint32(crc):
		return raftpb.Snapshot{}, fmt.Errorf("%s: checksum mismatch", path)
	}
	var sn raftpb.Snapshot
	err = eachField(inner, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			sn.Data = v
		case num == 2 && typ == protowire.BytesType:
			return sn.Metadata.Unmarshal(v)
		}
		return nil
	})
	if err != nil {
		return raftpb.Snapshot{}, fmt.Errorf("%s: %w", path, err)
	}
	return sn, nil
}

// eachField calls fn with each field of the encoded message b: its number
// and type, and its bytes (a length-delimited field's content) or value
// (a varint). A malformed b is an error.
func eachField(b []byte, fn func(num protowire.Number, typ protowire.Type, v []byte, varint uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("malformed field: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var (
			v      []byte
			varint uint64
		)
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			varint, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("malformed field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := fn(num, typ, v, varint); err != nil {
			return err
		}
	}
	return nil
}
