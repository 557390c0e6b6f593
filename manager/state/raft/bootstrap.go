package raft

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
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

// UnusedRaftID draws ids with draw until one is neither zero nor taken (a
// member's, or one removed for good). Ids are 64 random bits, so the first
// draw is the one in practice; it gives up after 16.
func UnusedRaftID(draw func() (uint64, error), taken func(id uint64) bool) (uint64, error) {
	for range 16 {
		id, err := draw()
		if err != nil {
			return 0, err
		}
		if id != 0 && !taken(id) {
			return id, nil
		}
	}
	return 0, errors.New("could not draw an unused raft id")
}

// Bootstrap writes the raft state of a new cluster whose sole voter is
// self into stateDir: entry 1 adds self, entry 2 is first (the ClusterInit
// batch), both committed. The state is complete or absent, never partial,
// so an init interrupted by a crash can simply run again.
func Bootstrap(stateDir string, sealer *encryption.Sealer, clusterID string, self *api.RaftMember, first *api.InternalRaftRequest) error {
	return BootstrapStatic(stateDir, sealer, clusterID, self, []*api.RaftMember{self}, first)
}

// BootstrapJoin writes the empty raft state of a member joining an
// existing cluster: its identity and the peers it was told about, which it
// answers until its own log names the members. The leader fills the log
// (entries or a snapshot) once the member is in the configuration.
func BootstrapJoin(stateDir string, sealer *encryption.Sealer, clusterID string, self *api.RaftMember, peers []*api.RaftMember) error {
	meta, err := walMetadata(clusterID, self, peers)
	if err != nil {
		return err
	}
	return storage.Bootstrap(stateDir, sealer, meta, raftpb.HardState{}, nil)
}

// walMetadata encodes the WAL metadata record of member self of
// clusterID; joinPeers only for a member that joins (BootstrapJoin).
func walMetadata(clusterID string, self *api.RaftMember, joinPeers []*api.RaftMember) ([]byte, error) {
	meta, err := proto.Marshal(&api.WALMetadata{RaftId: self.RaftId, NodeId: self.NodeId, ClusterId: clusterID, JoinPeers: joinPeers})
	if err != nil {
		return nil, fmt.Errorf("encode wal metadata: %w", err)
	}
	return meta, nil
}

// decodeWALMetadata decodes what walMetadata wrote into the log in
// stateDir.
func decodeWALMetadata(stateDir string, b []byte) (*api.WALMetadata, error) {
	var meta api.WALMetadata
	if err := proto.Unmarshal(b, &meta); err != nil {
		return nil, fmt.Errorf("wal metadata in %s: not a jaco member's log: %w", stateDir, err)
	}
	if meta.RaftId == 0 {
		return nil, fmt.Errorf("wal metadata in %s names no raft member: not a jaco member's log", stateDir)
	}
	return &meta, nil
}

// Exists reports whether stateDir holds raft state.
func Exists(stateDir string) bool { return storage.Exists(stateDir) }
