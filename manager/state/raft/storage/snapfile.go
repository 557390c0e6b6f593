package storage

import (
	"fmt"
	"hash/crc32"
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
