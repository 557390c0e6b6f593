package store

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

// Proposer puts a batch of actions through consensus. Propose returns once
// the entry holding them is applied locally, with Apply's error for it, or
// fails when it cannot know (for instance when leadership is lost). The raft
// node implements it.
type Proposer interface {
	Propose(ctx context.Context, actions []*api.StoreAction) error
}

var errNoProposer = errors.New("store: no proposer set")

// Tx is the write transaction given to Update's fn. It reads the state as of
// the start of Update plus its own recorded actions; Create, Update and
// Delete check an action against that view and record it, and fail (having
// recorded nothing) with the error Apply would give. A Tx must not be used
// after fn returns, nor by several goroutines at once.
type Tx struct {
	readTx
	batch   batch
	now     *timestamppb.Timestamp
	actions []*api.StoreAction
}

// pending holds the steps a Tx checked but has not written into its
// transaction yet. They are written, in order, only when something reads
// the transaction (readTx.view) or a check needs the transaction to hold
// them. A Tx that records many actions and reads nothing after them (the
// scheduler's 500 assignments, the orchestrator's creations) then writes
// none into the database's indexes: writing them cost as much as applying them
// (a fifth of the CPU of BenchmarkPlacement).
type pending struct {
	batch *batch
	steps []step
	// last is the index in steps of the latest step on each table/id,
	// made once steps outgrow pendingScan: most Txs record one action
	// (a join token, a status report), and a map for it was a tenth of
	// what the leader allocated a write.
	last map[objectKey]int
}

// pendingScan is how many steps are searched one by one for an id.
const pendingScan = 8

// latest returns the index in steps of the latest step on k.
func (p *pending) latest(k objectKey) (int, bool) {
	if p.last != nil {
		i, ok := p.last[k]
		return i, ok
	}
	for i := len(p.steps) - 1; i >= 0; i-- {
		if st := p.steps[i]; st.t == k.t && st.obj.GetId() == k.id {
			return i, true
		}
	}
	return 0, false
}

// write puts the pending steps into the transaction.
func (p *pending) write() {
	if len(p.steps) == 0 {
		return
	}
	for i := range p.steps {
		if _, err := p.batch.do(&p.steps[i]); err != nil {
			// check found nothing in the way, and nothing ran between.
			panic(fmt.Sprintf("store: write a checked action: %v", err))
		}
	}
	clear(p.steps)
	p.steps = p.steps[:0]
	clear(p.last)
}

// check checks a as batch.check would once every pending step is
// written. Only an object's own id decides a step of a table without
// unique secondary indexes, so a pending step on that id answers; any
// other table writes the pending steps first and asks the transaction.
func (p *pending) check(a *api.StoreAction) (step, error) {
	obj := target(a)
	if obj == nil {
		return p.batch.check(a) // refused
	}
	t, err := tableOf(obj)
	if err != nil || t.hasUniqueSecondary() {
		p.write()
		return p.batch.check(a)
	}
	i, ok := p.latest(objectKey{t, obj.GetId()})
	if !ok {
		return p.batch.check(a)
	}
	prev := p.steps[i]
	s := step{t: t, kind: a.GetKind(), obj: obj}
	exists := prev.kind != api.StoreAction_KIND_DELETE
	switch s.kind {
	case api.StoreAction_KIND_CREATE:
		if exists {
			return step{}, s.idTaken()
		}
	case api.StoreAction_KIND_UPDATE, api.StoreAction_KIND_DELETE:
		if !exists {
			return step{}, s.missing()
		}
		// Written, prev's object would carry prev.base (batch.do at
		// index 0), and the batch would remember that base for it.
		s.old, s.base = prev.obj, prev.base
		if err := s.carries(obj.GetMeta().GetVersion()); err != nil {
			return step{}, err
		}
	default:
		return step{}, fmt.Errorf("%s: %w", s.what(), ErrInvalid)
	}
	return s, nil
}

// add keeps a checked step until the next write.
func (p *pending) add(s step) {
	p.steps = append(p.steps, s)
	switch {
	case p.last != nil:
		p.last[objectKey{s.t, s.obj.GetId()}] = len(p.steps) - 1
	case len(p.steps) > pendingScan:
		p.last = make(map[objectKey]int, len(p.steps))
		for i, st := range p.steps {
			p.last[objectKey{st.t, st.obj.GetId()}] = i
		}
	}
}

// Create records the creation of obj, with meta.created_at and
// meta.updated_at set to the time Update started. obj is copied: later
// changes to it are not recorded.
func (tx *Tx) Create(obj Object) error {
	return tx.record(api.StoreAction_KIND_CREATE, obj)
}

// Update records obj as the new content of the stored object with its id.
// obj's meta.version must be the version read (through tx or earlier);
// meta.updated_at is set to the time Update started.
func (tx *Tx) Update(obj Object) error {
	return tx.record(api.StoreAction_KIND_UPDATE, obj)
}

// Delete records the deletion of the object with obj's id; obj's
// meta.version must be the version read.
func (tx *Tx) Delete(obj Object) error {
	return tx.record(api.StoreAction_KIND_DELETE, obj)
}

func (tx *Tx) record(kind api.StoreAction_Kind, obj Object) error {
	obj = proto.Clone(obj).(Object)
	a, err := newAction(kind, obj)
	if err != nil {
		return err
	}
	if kind != api.StoreAction_KIND_DELETE {
		meta := mutableMeta(obj)
		meta.UpdatedAt = tx.now
		if kind == api.StoreAction_KIND_CREATE {
			meta.CreatedAt = tx.now
		}
	}
	st, err := tx.pending.check(a)
	if err != nil {
		return err
	}
	tx.pending.add(st)
	tx.actions = append(tx.actions, a)
	return nil
}

// Update runs fn in a Tx and, when fn returns nil having recorded actions,
// proposes them as one batch and waits until it is applied. It returns fn's
// error, the proposer's, or Apply's refusal of the batch (for instance
// ErrVersionConflict when another write got in first: read again and
// retry). The store changes only through Apply, never here.
func (s *Store) Update(ctx context.Context, fn func(tx *Tx) error) error {
	// A writable copy of the latest version gives fn its own writes to
	// read, apart from Apply's. It is never committed.
	txn := s.db.Load().Write()
	tx := &Tx{batch: batch{txn: txn}, now: timestamppb.Now()}
	tx.readTx = readTx{txn: txn, pending: &pending{batch: &tx.batch}}
	err := fn(tx)
	if err != nil || len(tx.actions) == 0 {
		return err
	}
	p := s.getProposer()
	if p == nil {
		return errNoProposer
	}
	return p.Propose(ctx, tx.actions)
}

// UpdateRetrying is Update for a write that states an intent ("add this
// label", "record this status") rather than a version: when the batch is
// refused because a concurrent write to an object fn read committed first
// (ErrVersionConflict), fn runs again on the fresh state, up to attempts
// times in all. fn must set everything it reports afresh on each run.
func (s *Store) UpdateRetrying(ctx context.Context, attempts int, fn func(tx *Tx) error) error {
	var err error
	for range max(attempts, 1) {
		if err = s.Update(ctx, fn); !errors.Is(err, ErrVersionConflict) {
			return err
		}
	}
	return err
}
