package raft

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/durable"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/raft/storage"
)

// RemovedMembers returns the members removed for good, sorted by raft id.
func (n *Node) RemovedMembers() []*api.RaftMember { return n.members.removedList() }

// Term is this member's current raft term.
func (n *Node) Term() uint64 { return n.rn.Status().Term }

// WriteRestored writes into stateDir the raft state of a member restored
// from a backup: a snapshot at index and term whose configuration has self
// as the sole voter and whose payload is snap, and a hard state at that
// term with everything up to index committed. Started, the member elects
// itself at term+1, above any term the old cluster used up to the backup.
//
// Like Bootstrap the state appears whole or not at all: it is built in a
// sibling directory and renamed into place, and stateDir must not exist.
func WriteRestored(stateDir string, sealer *encryption.Sealer, clusterID string, self *api.RaftMember, term, index uint64, snap *api.RaftSnapshot) (err error) {
	if index == 0 || term == 0 {
		return fmt.Errorf("restore raft state: index %d term %d: both must be positive", index, term)
	}
	if _, err := os.Lstat(stateDir); !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restore raft state: %s already exists", stateDir)
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(snap)
	if err != nil {
		return fmt.Errorf("encode restored snapshot: %w", err)
	}
	meta, err := walMetadata(clusterID, self, nil)
	if err != nil {
		return err
	}
	staging := stateDir + ".restore"
	if err := os.RemoveAll(staging); err != nil {
		return fmt.Errorf("clear %s: %w", staging, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(staging) // best effort: a retry clears it again
		}
	}()
	if err := storage.Bootstrap(staging, sealer, meta, raftpb.HardState{}, nil); err != nil {
		return err
	}
	disk, _, err := storage.Open(staging, sealer, storage.Options{})
	if err != nil {
		return fmt.Errorf("open staged raft state: %w", err)
	}
	rs := raftpb.Snapshot{Data: data, Metadata: raftpb.SnapshotMetadata{
		ConfState: raftpb.ConfState{Voters: []uint64{self.RaftId}},
		Index:     index,
		Term:      term,
	}}
	if err := disk.SaveSnapshot(rs); err != nil {
		disk.Close()
		return err
	}
	if err := disk.Save(raftpb.HardState{Term: term, Commit: index}, nil); err != nil {
		disk.Close()
		return err
	}
	if err := disk.Close(); err != nil {
		return err
	}
	if err := os.Rename(staging, stateDir); err != nil {
		return fmt.Errorf("install restored raft state: %w", err)
	}
	return durable.SyncDir(filepath.Dir(stateDir))
}
