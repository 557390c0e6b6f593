package raft

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// BootstrapStatic writes the raft state of one member of a cluster formed
// from a static configuration (docs/adr/0014-static-formation.md): entries
// 1..len(members) add every member as a voter, the next is first (the
// ClusterInit batch), all committed at term 1 — as etcd's --initial-cluster
// does. Every member must be given the same members (in the same order)
// and the same first: raft holds committed entries to be identical on
// every member, and here nothing but the identical inputs makes them so.
func BootstrapStatic(stateDir string, sealer *encryption.Sealer, clusterID string, self *api.RaftMember, members []*api.RaftMember, first *api.InternalRaftRequest) error {
	meta, err := walMetadata(clusterID, self, nil)
	if err != nil {
		return err
	}
	det := proto.MarshalOptions{Deterministic: true}
	var ents []raftpb.Entry
	for _, m := range members {
		memberCtx, err := det.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode member: %w", err)
		}
		cc := raftpb.ConfChange{Type: raftpb.ConfChangeAddNode, NodeID: m.RaftId, Context: memberCtx}
		data, err := cc.Marshal()
		if err != nil {
			return fmt.Errorf("encode conf change: %w", err)
		}
		ents = append(ents, raftpb.Entry{Type: raftpb.EntryConfChange, Term: 1, Index: uint64(len(ents) + 1), Data: data})
	}
	firstData, err := det.Marshal(first)
	if err != nil {
		return fmt.Errorf("encode first entry: %w", err)
	}
	ents = append(ents, raftpb.Entry{Type: raftpb.EntryNormal, Term: 1, Index: uint64(len(ents) + 1), Data: firstData})
	hs := raftpb.HardState{Term: 1, Commit: uint64(len(ents))}
	return storage.Bootstrap(stateDir, sealer, meta, hs, ents)
}
