package raft

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// NewRaftID returns a random, non-zero raft id. Ids are never reused: a
// member that leaves and comes back gets a new one.
func NewRaftID() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("read random raft id: %w", err)
		}
		if id := binary.BigEndian.Uint64(b[:]); id != 0 {
			return id, nil
		}
	}
}

// Bootstrap writes the raft state of a new cluster whose sole voter is
// self into stateDir: entry 1 adds self, entry 2 is first (the ClusterInit
// batch), both committed. The state is complete or absent, never partial,
// so an init interrupted by a crash can simply run again.
func Bootstrap(stateDir string, sealer *encryption.Sealer, clusterID string, self *api.RaftMember, first *api.InternalRaftRequest) error {
	meta, err := proto.Marshal(&api.WALMetadata{RaftId: self.RaftId, NodeId: self.NodeId, ClusterId: clusterID})
	if err != nil {
		return fmt.Errorf("encode wal metadata: %w", err)
	}
	memberCtx, err := proto.Marshal(self)
	if err != nil {
		return fmt.Errorf("encode member: %w", err)
	}
	cc := raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: self.RaftId, Context: memberCtx}
	ccData, err := cc.Marshal()
	if err != nil {
		return fmt.Errorf("encode conf change: %w", err)
	}
	firstData, err := proto.Marshal(first)
	if err != nil {
		return fmt.Errorf("encode first entry: %w", err)
	}
	ents := []raftpb.Entry{
		{Type: raftpb.EntryConfChange, Term: 1, Index: 1, Data: ccData},
		{Type: raftpb.EntryNormal, Term: 1, Index: 2, Data: firstData},
	}
	hs := raftpb.HardState{Term: 1, Commit: 2}
	return storage.Bootstrap(stateDir, sealer, meta, hs, ents)
}

// BootstrapJoin writes the empty raft state of a member joining an
// existing cluster: its identity and the peers it was told about, which it
// answers until its own log names the members. The leader fills the log
// (entries or a snapshot) once the member is in the configuration.
func BootstrapJoin(stateDir string, sealer *encryption.Sealer, clusterID string, self *api.RaftMember, peers []*api.RaftMember) error {
	meta, err := proto.Marshal(&api.WALMetadata{RaftId: self.RaftId, NodeId: self.NodeId, ClusterId: clusterID, JoinPeers: peers})
	if err != nil {
		return fmt.Errorf("encode wal metadata: %w", err)
	}
	return storage.Bootstrap(stateDir, sealer, meta, raftpb.HardState{}, nil)
}

// Exists reports whether stateDir holds raft state.
func Exists(stateDir string) bool { return storage.Exists(stateDir) }
