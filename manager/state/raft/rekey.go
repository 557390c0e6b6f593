package raft

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"

	"github.com/jaco-project/jaco/manager/encryption"
)

// rekeyRequest asks the Ready loop to rewrite the log under a new key.
type rekeyRequest struct {
	sealer *encryption.Sealer
	done   chan error
}

// Rekey rewrites this member's raft state on disk under sealer: a snapshot
// of the applied state and the entries after it, everything older deleted
// (storage.Rekey). It runs on the Ready loop between two Readys, so the log
// does not move meanwhile. sealer must also open what the old key sealed
// until Rekey returns; afterwards the old key is needed for nothing.
//
// A failure past the point where the old log is closed stops the member
// (the daemon exits); the next open finishes or discards the rekey.
func (n *Node) Rekey(ctx context.Context, sealer *encryption.Sealer) error {
	req := rekeyRequest{sealer: sealer, done: make(chan error, 1)}
	select {
	case n.rekeyC <- req:
	case <-n.done:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-n.done:
		return ErrStopped
	}
}

func (n *Node) rekey(sealer *encryption.Sealer) error {
	if err := n.awaitSnapshot(); err != nil {
		return err
	}
	snap, err := n.mem.Snapshot()
	if err != nil {
		return fmt.Errorf("rekey: read snapshot: %w", err)
	}
	if applied := n.applied.Load(); applied > snap.Metadata.Index {
		var hurry atomic.Bool
		hurry.Store(true) // on the Ready loop: no rests
		data, err := n.frozenState()(&hurry)
		if err != nil {
			return err
		}
		if snap, err = n.mem.CreateSnapshot(applied, &n.confState, nil); err != nil {
			return fmt.Errorf("rekey: create snapshot at %d: %w", applied, err)
		}
		snap.Data = data
	} else if !raft.IsEmptySnap(snap) {
		// The memory storage keeps no snapshot data (snapsend.go).
		if snap.Data, err = n.disk.ReadSnapshot(snap.Metadata); err != nil {
			return fmt.Errorf("rekey: %w", err)
		}
	}
	last, err := n.mem.LastIndex()
	if err != nil {
		return fmt.Errorf("rekey: last index: %w", err)
	}
	var ents []raftpb.Entry
	if last > snap.Metadata.Index {
		if ents, err = n.mem.Entries(snap.Metadata.Index+1, last+1, math.MaxUint64); err != nil {
			return fmt.Errorf("rekey: read entries: %w", err)
		}
	}
	if err := n.disk.Rekey(sealer, snap, ents); err != nil {
		return fmt.Errorf("rekey: %w", err)
	}
	n.snapshotIndex = snap.Metadata.Index
	n.snapshotBytes, n.logBytes = len(snap.Data), 0
	n.cfg.Logger.Info("raft log rewritten under a new data key", "snapshot_index", snap.Metadata.Index, "entries", len(ents))
	return nil
}
