package store

import (
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/manager/state/cowdb"

	"github.com/jaco-project/jaco/api"
)

// Apply applies the batch of a committed raft entry at index, all or
// nothing, then publishes it: ApplyHeld followed by Publish.
func (s *Store) Apply(index uint64, req *api.InternalRaftRequest) error {
	err := s.ApplyHeld(index, req)
	s.Publish()
	return err
}

// ApplyHeld applies the batch of a committed raft entry at index, all or
// nothing, and holds it: readers, watchers and AppliedIndex see it, with
// every batch held before it, at the next Publish, at once. The raft node
// calls it for every committed normal entry, in log order, on every
// manager, and publishes each Ready's entries before it answers their
// proposers; it is the only writer of the store's content. Held batches
// share one writable version, so the tree nodes a run of small writes
// goes through are copied once per Ready rather than once per entry
// (that copying was most of what a follower allocated). The
// objects of req become the stored ones: the caller must not use req
// afterwards (the raft node decodes every entry afresh), which spares a
// copy of every object written, on every member.
//
// The outcome depends only on the current content, index and req, so every
// replica reaches the same state: versions come from index, timestamps from
// the proposer (Apply never reads a clock). On success each written object
// gets meta.version = index; an update keeps the stored meta.created_at and
// takes meta.updated_at from the action. A refused batch changes nothing
// and returns an error wrapping ErrNotFound, ErrExists, ErrVersionConflict
// or ErrInvalid. Either way index becomes AppliedIndex.
func (s *Store) ApplyHeld(index uint64, req *api.InternalRaftRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heldIndex = index
	if s.held == nil {
		s.held = s.db.Load().Write()
	}
	actions := req.GetActions()
	b := batch{txn: s.held, index: index, alone: len(actions) == 1}
	var done []step // what undo takes back; a lone action has nothing before it
	if !b.alone {
		done = make([]step, 0, len(actions))
	}
	held := len(s.heldEvents) // the events of the batches before this one
	for i, a := range actions {
		switch obj := target(a).(type) {
		case *api.Task:
			s.specs.Share(obj)
		case *api.Service:
			if a.GetKind() == api.StoreAction_KIND_DELETE {
				s.specs.Forget(obj.GetId())
			}
		}
		st, err := b.check(a)
		var ev Event
		if err == nil {
			ev, err = b.do(&st)
		}
		if err != nil {
			b.undo(done)
			clear(s.heldEvents[held:])
			s.heldEvents = s.heldEvents[:held]
			return fmt.Errorf("apply entry %d, action %d: %w", index, i, err)
		}
		if !b.alone {
			done = append(done, st)
		}
		s.heldEvents = append(s.heldEvents, ev)
	}
	return nil
}

// Publish commits the batches held since the last Publish: readers see
// them, AppliedIndex becomes the last one's index, and their events go to
// the watchers, in apply order.
func (s *Store) Publish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.publishHeld()
}

// publishHeld is Publish with s.mu held.
func (s *Store) publishHeld() {
	if s.held == nil {
		return
	}
	s.db.Store(s.held.Commit())
	s.held = nil
	s.applied.Store(s.heldIndex)
	s.publish(s.heldEvents...)
	clear(s.heldEvents)
	s.heldEvents = s.heldEvents[:0]
}

// batch checks and writes the actions of one request in a writable
// version of the database.
//
// ApplyHeld runs it with the entry's index; Update runs it with index 0 on
// a throwaway transaction to check each action as it is recorded and to
// let the Tx read its own writes. There, written objects keep the version
// their action carries (0 for a create), so a later action of the same Tx
// on the same object carries that version again.
type batch struct {
	txn   *cowdb.Version
	index uint64
	// base is, for each object written by this batch, the version it had
	// before the batch (0 when the batch created it). Later actions of the
	// batch on it are checked against base: they were recorded by code that
	// saw the pending object, not the one stamped with index.
	base map[objectKey]uint64
	// alone says the batch is one action: nothing reads base after it,
	// and most entries (every join token, every status report) are one.
	alone bool
}

// recording says the batch checks a Tx's actions as they are recorded
// (index 0) rather than applying a committed entry.
func (b *batch) recording() bool { return b.index == 0 }

// objectKey names a stored object: its table and id.
type objectKey struct {
	t  *table
	id string
}

// step is one action checked against the batch's transaction: what
// writing it takes.
type step struct {
	t    *table
	kind api.StoreAction_Kind
	obj  Object
	// old is the stored object an update or delete replaces, base the
	// version it had before this batch (see batch.base).
	old  Object
	base uint64
}

// check looks a up against the transaction, changing nothing: no other
// object holds one of its unique index values and, while a Tx records,
// the object exists or not as its kind needs and carries the version it
// must. Applying, the write finds the rest (do). Writing a checked step
// recorded by a Tx cannot fail but for a bug.
func (b *batch) check(a *api.StoreAction) (step, error) {
	obj := target(a)
	if obj == nil {
		return step{}, fmt.Errorf("%s without target: %w", verb(a.GetKind()), ErrInvalid)
	}
	t, err := tableOf(obj)
	if err != nil {
		return step{}, err
	}
	id := obj.GetId()
	if id == "" {
		return step{}, fmt.Errorf("%s %s with empty id: %w", verb(a.GetKind()), t.name, ErrInvalid)
	}
	s := step{t: t, kind: a.GetKind(), obj: obj}
	switch s.kind {
	case api.StoreAction_KIND_CREATE:
		// Applying, the insert itself finds a taken id (do): a lookup
		// first walked the id tree of a large table a second time for
		// every object created (docs/adr/0052). A Tx records without
		// writing (pending), so its creates look the id up.
		if b.recording() && b.txn.Has(t.name, id) {
			return step{}, s.idTaken()
		}
	case api.StoreAction_KIND_UPDATE, api.StoreAction_KIND_DELETE:
		// Applying, likewise, the write finds the object it replaces and
		// checks its version (do): a lookup first was a second descent of
		// the id tree for every update, most of what the managers write
		// once tasks run (status reports, assignments).
		if b.recording() {
			raw := b.txn.Get(t.name, id)
			if raw == nil {
				return step{}, s.missing()
			}
			if err := b.replaces(&s, raw.(Object), obj.GetMeta().GetVersion()); err != nil {
				return step{}, err
			}
		}
	default:
		return step{}, fmt.Errorf("%s: %w", s.what(), ErrInvalid)
	}
	if s.kind != api.StoreAction_KIND_DELETE {
		if err := checkUnique(b.txn, t, obj); err != nil {
			return step{}, fmt.Errorf("%s: %w", s.what(), err)
		}
	}
	return s, nil
}

// what names the step in errors; built only for them, as most steps
// succeed.
func (s step) what() string {
	return fmt.Sprintf("%s %s %s", verb(s.kind), s.t.name, s.obj.GetId())
}

// idTaken is the refusal of a create whose id an object holds.
func (s step) idTaken() error {
	return fmt.Errorf("%s: id %w", s.what(), ErrExists)
}

// missing is the refusal of an update or delete of no object.
func (s step) missing() error {
	return fmt.Errorf("%s: %w", s.what(), ErrNotFound)
}

// carries refuses s unless its action carries s.base, the version it
// must.
func (s step) carries(version uint64) error {
	if version != s.base {
		return fmt.Errorf("%s: %w: action has version %d, store has %d",
			s.what(), ErrVersionConflict, version, s.base)
	}
	return nil
}

// replaces makes stored the object s replaces, refusing s unless it
// carries the version this batch must (b.version).
func (b *batch) replaces(s *step, stored Object, carried uint64) error {
	s.old, s.base = stored, b.version(s.t, stored)
	return s.carries(carried)
}

// version is the version actions of this batch must carry for stored.
func (b *batch) version(t *table, stored Object) uint64 {
	if v, ok := b.base[objectKey{t, stored.GetId()}]; ok {
		return v
	}
	return stored.GetMeta().GetVersion()
}

// do writes a checked step: it stores s.obj itself, replacing the object
// with its id (nil for a create), or deletes that object. Applying, it
// finds what it replaces in the write itself, and refuses, changing
// nothing, a create whose id is taken and an update or delete of no
// object or of another version; s then holds what was replaced (s.old,
// s.base), for undo. Apply owns its request (see Apply).
// Update's check (index 0) stores the action's own object: Tx made it,
// only the throwaway transaction holds it, and what do sets on it there
// (the version it carries, the stored created_at) Apply sets again.
func (b *batch) do(s *step) (Event, error) {
	carried := s.obj.GetMeta().GetVersion()
	if s.kind == api.StoreAction_KIND_DELETE {
		raw := b.txn.Delete(s.t.name, s.obj.GetId())
		if raw == nil {
			return Event{}, s.missing()
		}
		if !b.recording() {
			if err := b.replaces(s, raw.(Object), carried); err != nil {
				b.txn.Insert(s.t.name, raw)
				return Event{}, err
			}
		}
		return Event{Kind: EventDelete, Object: s.old, Index: b.index}, nil
	}
	meta := mutableMeta(s.obj)
	meta.Version = b.index
	if b.recording() {
		meta.Version = s.base
	}
	replaced := b.txn.Insert(s.t.name, s.obj)
	switch {
	case s.kind == api.StoreAction_KIND_CREATE && replaced != nil:
		// The id was taken (applying: check left it to the insert): put
		// its holder back, with its index entries, so the refused step
		// leaves nothing behind.
		b.txn.Insert(s.t.name, replaced)
		return Event{}, s.idTaken()
	case s.kind == api.StoreAction_KIND_UPDATE && replaced == nil:
		b.txn.Delete(s.t.name, s.obj.GetId())
		return Event{}, s.missing()
	case s.kind == api.StoreAction_KIND_UPDATE && !b.recording():
		if err := b.replaces(s, replaced.(Object), carried); err != nil {
			b.txn.Insert(s.t.name, replaced)
			return Event{}, err
		}
	}
	ev := Event{Kind: EventCreate, Object: s.obj, Index: b.index}
	if s.old != nil {
		created := s.old.GetMeta().GetCreatedAt()
		// An encoded table encoded the object in the insert, before it
		// had the stored created_at: it is encoded again with it.
		reencode := s.t.encoded && !sameTime(meta.GetCreatedAt(), created)
		meta.CreatedAt = created
		if reencode {
			b.txn.Insert(s.t.name, s.obj)
		}
		ev.Kind, ev.Old = EventUpdate, s.old
	} else {
		shareEqualTimes(meta)
	}
	if b.alone {
		return ev, nil
	}
	if b.base == nil {
		b.base = map[objectKey]uint64{}
	}
	b.base[objectKey{s.t, s.obj.GetId()}] = s.base
	return ev, nil
}

// undo takes back the written steps of a refused batch, last first, so
// that batches held before it in the same transaction stay as they were.
// Each restores exactly what do replaced: the object a create added is
// deleted, the one an update or delete replaced is put back, with its
// index entries.
func (b *batch) undo(done []step) {
	for i := len(done) - 1; i >= 0; i-- {
		s := done[i]
		if s.kind == api.StoreAction_KIND_CREATE {
			b.txn.Delete(s.t.name, s.obj.GetId())
		} else {
			b.txn.Insert(s.t.name, s.old)
		}
	}
}

// checkUnique refuses obj when another object of table t holds one of its
// unique index values.
func checkUnique(v *cowdb.Version, t *table, obj Object) error {
	for _, ix := range t.indexes {
		if ix.kind != unique {
			continue
		}
		key, ok := ix.key(obj)
		if !ok {
			continue
		}
		if holder, _ := v.First(t.name, ix.name, key).(Object); holder != nil && holder.GetId() != obj.GetId() {
			return fmt.Errorf("%s %s held by %s: %w", ix.name, key, holder.GetId(), ErrExists)
		}
	}
	return nil
}

// shareEqualTimes makes a created object's updated_at the very message
// of its created_at when the two are equal, as a Tx records them: decoded
// from the entry they are two, and a stored object is never changed in
// place, so one serves both. That is one heap object fewer for each
// stored object the collector marks, every cycle (docs/adr/0052: a join
// token was nine objects, and marking 400 000 of them took up to a second
// of CPU on every member, every few seconds).
func shareEqualTimes(m *api.Meta) {
	c, u := m.GetCreatedAt(), m.GetUpdatedAt()
	if c != nil && u != nil && sameTime(c, u) {
		m.UpdatedAt = c
	}
}

// sameTime tells whether a and b are the same time, or both unset.
func sameTime(a, b *timestamppb.Timestamp) bool {
	return (a == nil) == (b == nil) && a.GetSeconds() == b.GetSeconds() && a.GetNanos() == b.GetNanos()
}

// mutableMeta returns obj's meta, creating it when unset.
func mutableMeta(obj Object) *api.Meta {
	m := obj.ProtoReflect()
	fd := m.Descriptor().Fields().ByName("meta")
	return m.Mutable(fd).Message().Interface().(*api.Meta)
}

func verb(k api.StoreAction_Kind) string {
	switch k {
	case api.StoreAction_KIND_CREATE:
		return "create"
	case api.StoreAction_KIND_UPDATE:
		return "update"
	case api.StoreAction_KIND_DELETE:
		return "delete"
	}
	return "unknown action"
}
