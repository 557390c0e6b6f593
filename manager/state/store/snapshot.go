package store

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/cowdb"
)

// Save returns a copy of the whole content, from one consistent view, each
// list ordered by id so equal stores marshal (deterministically) to equal
// bytes.
func (s *Store) Save() *api.StoreSnapshot {
	return save(s.db.Load())
}

// Freeze is Save in two steps: the call fixes the content as it is now
// (one consistent view, cheap to take), the function it returns copies it
// out, and may run on another goroutine while later writes apply. The raft
// node freezes on its Ready loop and encodes a snapshot off it.
// What it returns shares the stored objects: encode it, do not change
// it. The objects of encoded tables come as their stored bytes, not
// decoded for the snapshot to encode again (docs/adr/0055).
func (s *Store) Freeze() func() api.FrozenStore {
	txn := s.db.Load()
	return func() api.FrozenStore {
		f := api.FrozenStore{Objects: saveShared(txn, false)}
		for _, t := range tableOrder {
			if !t.encoded {
				continue
			}
			e := api.EncodedObjects{Field: t.snapshotList.Number()}
			txn.AllEncoded(t.name, func(data []byte) bool {
				e.Objects = append(e.Objects, data)
				return true
			})
			f.Encoded = append(f.Encoded, e)
		}
		return f
	}
}

// SaveWithIndex is Save together with the AppliedIndex its content is
// the state at, read as one: no Apply or Restore falls between them.
func (s *Store) SaveWithIndex() (*api.StoreSnapshot, uint64) {
	s.mu.Lock()
	txn := s.db.Load()
	index := s.applied.Load()
	s.mu.Unlock()
	return save(txn), index
}

// save is a copy of everything txn sees, for callers that may change it.
func save(txn *cowdb.Version) *api.StoreSnapshot {
	return proto.CloneOf(saveShared(txn, true))
}

// saveShared is what txn sees, the stored objects themselves; the
// objects of encoded tables, decoded, only with encoded.
func saveShared(txn *cowdb.Version, encoded bool) *api.StoreSnapshot {
	snap := &api.StoreSnapshot{}
	m := snap.ProtoReflect()
	for _, t := range tableOrder {
		if t.encoded && !encoded {
			continue
		}
		var list protoreflect.List
		txn.All(t.name, "", func(obj any) bool {
			if list == nil {
				list = m.Mutable(t.snapshotList).List()
			}
			list.Append(protoreflect.ValueOfMessage(obj.(Object).ProtoReflect()))
			return true
		})
	}
	return snap
}

// Restore replaces the whole content with snap, taken at raft index, which
// becomes AppliedIndex. Objects keep their meta as saved. It is used on
// restart from a raft snapshot and when a follower receives one. As with
// Apply, the objects of snap become the stored ones: the caller must not
// use snap afterwards (the raft node decodes every snapshot afresh).
//
// Restore publishes a single EventReset rather than a diff: a snapshot
// stands for an unknown number of entries, and a watcher that keeps a view
// must read the store again. A snapshot with an empty or duplicate id or a
// unique-index collision is refused whole (ErrInvalid, ErrExists).
func (s *Store) Restore(snap *api.StoreSnapshot, index uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Held batches come first: committed after the restore, their
	// transaction would bring the old content back.
	s.publishHeld()

	s.specs = api.NewSpecs()
	for _, t := range snap.GetTasks() {
		s.specs.Share(t)
	}
	txn := s.db.Load().Write()
	err := errors.Join(
		restore(txn, snap.GetClusters()),
		restore(txn, snap.GetNodes()),
		restore(txn, snap.GetServices()),
		restore(txn, snap.GetTasks()),
		restore(txn, snap.GetJoinTokens()),
		restore(txn, snap.GetNetworks()),
		restore(txn, snap.GetSecrets()),
		restore(txn, snap.GetConfigs()),
		restore(txn, snap.GetVolumes()),
	)
	if err != nil {
		return fmt.Errorf("restore snapshot at %d: %w", index, err)
	}
	s.db.Store(txn.Commit())
	s.applied.Store(index)
	s.publish(Event{Kind: EventReset, Index: index})
	return nil
}

// restore replaces the content of T's table with objs.
func restore[T Object](txn *cowdb.Version, objs []T) error {
	var none T
	t, err := tableOf(none)
	if err != nil {
		return err
	}
	txn.Clear(t.name)
	for _, obj := range objs {
		id := obj.GetId()
		if id == "" {
			return fmt.Errorf("%s with empty id: %w", t.name, ErrInvalid)
		}
		if txn.Get(t.name, id) != nil {
			return fmt.Errorf("%s %s twice: %w", t.name, id, ErrExists)
		}
		if err := checkUnique(txn, t, obj); err != nil {
			return fmt.Errorf("%s %s: %w", t.name, id, err)
		}
		txn.Insert(t.name, obj)
	}
	return nil
}
