package storage

import (
	"encoding/binary"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/manager/encryption"
)

// Associated data binds a sealed payload to its kind and log position.
func entryAD(index, term uint64) []byte    { return positionAD('e', index, term) }
func snapshotAD(index, term uint64) []byte { return positionAD('s', index, term) }

func positionAD(kind byte, index, term uint64) []byte {
	ad := make([]byte, 17)
	ad[0] = kind
	binary.BigEndian.PutUint64(ad[1:], index)
	binary.BigEndian.PutUint64(ad[9:], term)
	return ad
}

// sealEntries returns copies of ents whose Data is sealed. Empty data stays
// empty: the leader's no-op entry of a new term has nothing to hide.
func sealEntries(s *encryption.Sealer, ents []raftpb.Entry) []raftpb.Entry {
	out := make([]raftpb.Entry, len(ents))
	for i, e := range ents {
		out[i] = e
		if len(e.Data) > 0 {
			out[i].Data = s.Seal(e.Data, entryAD(e.Index, e.Term))
		}
	}
	return out
}

// openEntries opens entries in place.
func openEntries(s *encryption.Sealer, ents []raftpb.Entry) error {
	for i := range ents {
		e := &ents[i]
		if len(e.Data) == 0 {
			continue
		}
		plain, err := s.Open(e.Data, entryAD(e.Index, e.Term))
		if err != nil {
			return fmt.Errorf("open entry %d (term %d): %w", e.Index, e.Term, err)
		}
		e.Data = plain
	}
	return nil
}

func sealSnapshot(s *encryption.Sealer, snap raftpb.Snapshot) raftpb.Snapshot {
	m := snap.Metadata
	snap.Data = s.Seal(snap.Data, snapshotAD(m.Index, m.Term))
	return snap
}

func openSnapshot(s *encryption.Sealer, snap *raftpb.Snapshot) error {
	m := snap.Metadata
	plain, err := s.Open(snap.Data, snapshotAD(m.Index, m.Term))
	if err != nil {
		return fmt.Errorf("open snapshot %d (term %d): %w", m.Index, m.Term, err)
	}
	snap.Data = plain
	return nil
}
