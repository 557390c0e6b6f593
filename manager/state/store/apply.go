package store

import (
	"fmt"

	"github.com/hashicorp/go-memdb"

	"github.com/jaco-project/jaco/api"
)

// Apply applies the batch of a committed raft entry at index, all or
// nothing, then publishes one event per action. The raft node calls it for
// every committed normal entry, in log order, on every manager; it is the
// only writer of the store's content. The objects of req become the
// stored ones: the caller must not use req afterwards (the raft node
// decodes every entry afresh), which spares a copy of every object
// written, on every member.
//
// The outcome depends only on the current content, index and req, so every
// replica reaches the same state: versions come from index, timestamps from
// the proposer (Apply never reads a clock). On success each written object
// gets meta.version = index; an update keeps the stored meta.created_at and
// takes meta.updated_at from the action. A refused batch changes nothing
// and returns an error wrapping ErrNotFound, ErrExists, ErrVersionConflict
// or ErrInvalid. Either way index becomes AppliedIndex.
func (s *Store) Apply(index uint64, req *api.InternalRaftRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.applied.Store(index)

	txn := s.db.Txn(true)
	b := batch{txn: txn, index: index}
	events := make([]Event, 0, len(req.GetActions()))
	for i, a := range req.GetActions() {
		switch obj := target(a).(type) {
		case *api.Task:
			s.specs.Share(obj)
		case *api.Service:
			if a.GetKind() == api.StoreAction_KIND_DELETE {
				s.specs.Forget(obj.GetId())
			}
		}
		ev, err := b.apply(a)
		if err != nil {
			txn.Abort()
			return fmt.Errorf("apply entry %d, action %d: %w", index, i, err)
		}
		events = append(events, ev)
	}
	txn.Commit()
	s.publish(events...)
	return nil
}

// batch applies the actions of one request to a memdb write transaction.
//
// Apply runs it with the entry's index; Update runs it with index 0 on a
// throwaway transaction to check each action as it is recorded and to let
// the Tx read its own writes. There, written objects keep the version their
// action carries (0 for a create), so a later action of the same Tx on the
// same object carries that version again.
type batch struct {
	txn   *memdb.Txn
	index uint64
	// base is, for each object written by this batch, the version it had
	// before the batch (0 when the batch created it). Later actions of the
	// batch on it are checked against base: they were recorded by code that
	// saw the pending object, not the one stamped with index.
	base map[string]uint64
}

func (b *batch) apply(a *api.StoreAction) (Event, error) {
	obj := target(a)
	if obj == nil {
		return Event{}, fmt.Errorf("%s without target: %w", verb(a), ErrInvalid)
	}
	t, err := tableOf(obj)
	if err != nil {
		return Event{}, err
	}
	id := obj.GetId()
	if id == "" {
		return Event{}, fmt.Errorf("%s %s with empty id: %w", verb(a), t.Name, ErrInvalid)
	}
	what := fmt.Sprintf("%s %s %s", verb(a), t.Name, id)
	raw, err := b.txn.First(t.Name, indexID, id)
	if err != nil {
		return Event{}, fmt.Errorf("%s: %w", what, err)
	}
	switch a.GetKind() {
	case api.StoreAction_KIND_CREATE:
		if raw != nil {
			return Event{}, fmt.Errorf("%s: id %w", what, ErrExists)
		}
		return b.write(what, t, obj, nil, 0)
	case api.StoreAction_KIND_UPDATE, api.StoreAction_KIND_DELETE:
		if raw == nil {
			return Event{}, fmt.Errorf("%s: %w", what, ErrNotFound)
		}
		old := raw.(Object)
		version := b.version(t.Name, old)
		if got := obj.GetMeta().GetVersion(); got != version {
			return Event{}, fmt.Errorf("%s: %w: action has version %d, store has %d",
				what, ErrVersionConflict, got, version)
		}
		if a.GetKind() == api.StoreAction_KIND_UPDATE {
			return b.write(what, t, obj, old, version)
		}
		if err := b.txn.Delete(t.Name, old); err != nil {
			return Event{}, fmt.Errorf("%s: %w", what, err)
		}
		return Event{Kind: EventDelete, Object: old, Index: b.index}, nil
	}
	return Event{}, fmt.Errorf("%s: %w", what, ErrInvalid)
}

// version is the version actions of this batch must carry for stored.
func (b *batch) version(table string, stored Object) uint64 {
	if v, ok := b.base[table+"/"+stored.GetId()]; ok {
		return v
	}
	return stored.GetMeta().GetVersion()
}

// write stores obj itself, replacing old (nil for a create); base is the
// version obj had before this batch. Apply owns its request (see Apply).
// Update's check (index 0) stores the action's own object: Tx made it,
// only the throwaway transaction holds it, and what write sets on it there
// (the version it carries, the stored created_at) Apply sets again.
func (b *batch) write(what string, t *memdb.TableSchema, obj, old Object, base uint64) (Event, error) {
	meta := mutableMeta(obj)
	meta.Version = b.index
	if b.index == 0 {
		meta.Version = base
	}
	ev := Event{Kind: EventCreate, Object: obj, Index: b.index}
	if old != nil {
		meta.CreatedAt = old.GetMeta().GetCreatedAt()
		ev.Kind, ev.Old = EventUpdate, old
	}
	if err := insert(b.txn, t, obj); err != nil {
		return Event{}, fmt.Errorf("%s: %w", what, err)
	}
	if b.base == nil {
		b.base = map[string]uint64{}
	}
	b.base[t.Name+"/"+obj.GetId()] = base
	return ev, nil
}

// insert stores obj in table t unless another object holds one of its
// unique index values.
func insert(txn *memdb.Txn, t *memdb.TableSchema, obj Object) error {
	for _, ix := range t.Indexes {
		if !ix.Unique || ix.Name == indexID {
			continue
		}
		value := ix.Indexer.(valuer).value(obj)
		holder, err := txn.First(t.Name, ix.Name, value)
		if err != nil {
			return err
		}
		if holder != nil && holder.(Object).GetId() != obj.GetId() {
			return fmt.Errorf("%s %v held by %s: %w", ix.Name, value, holder.(Object).GetId(), ErrExists)
		}
	}
	return txn.Insert(t.Name, obj)
}

// mutableMeta returns obj's meta, creating it when unset.
func mutableMeta(obj Object) *api.Meta {
	m := obj.ProtoReflect()
	fd := m.Descriptor().Fields().ByName("meta")
	return m.Mutable(fd).Message().Interface().(*api.Meta)
}

func verb(a *api.StoreAction) string {
	switch a.GetKind() {
	case api.StoreAction_KIND_CREATE:
		return "create"
	case api.StoreAction_KIND_UPDATE:
		return "update"
	case api.StoreAction_KIND_DELETE:
		return "delete"
	}
	return "unknown action"
}
