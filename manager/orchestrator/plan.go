package orchestrator

import (
	"context"
	"fmt"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

type opKind int

const (
	opNone opKind = iota // cancelled: a task created and deleted by one pass
	opCreate
	opUpdate
	opDelete
)

// op is the net write of one pass to one task, or to a service's update
// status.
type op struct {
	kind opKind
	obj  store.Object
	// glued: commit in the same batch as the op before it (a replacement
	// and the stop of the task it replaces).
	glued bool
}

// plan is a pass's writes, one net op per object in the order first
// touched, so it can be proposed in several batches: an op on an object
// that existed carries the version the pass read, and no later batch
// touches that object again.
type plan struct {
	ops  []*op
	byID map[string]*op
}

func (pl *plan) record(kind opKind, obj store.Object, glued bool) {
	id := obj.GetId()
	prev := pl.byID[id]
	if prev == nil {
		o := &op{kind: kind, obj: obj, glued: glued}
		pl.ops = append(pl.ops, o)
		pl.byID[id] = o
		return
	}
	switch {
	case kind == opDelete && prev.kind == opCreate:
		prev.kind = opNone
	case kind == opDelete:
		prev.kind, prev.obj = opDelete, obj
	default: // an update of an object created or updated before
		prev.obj = obj
	}
}

// batches splits the plan into batches of about size ops, never between
// glued ops.
func (pl *plan) batches(size int) [][]*op {
	var out [][]*op
	var cur []*op
	for _, o := range pl.ops {
		if o.kind == opNone {
			continue
		}
		if len(cur) >= size && !o.glued {
			out = append(out, cur)
			cur = nil
		}
		cur = append(cur, o)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// commit proposes one batch. It leaves out the creation of a task whose
// service has been removed since the pass read it: nothing would stop
// that task until a later pass saw the removal.
func commit(ctx context.Context, st *store.Store, batch []*op) error {
	err := st.Update(ctx, func(tx *store.Tx) error {
		standing := map[string]bool{}
		for _, o := range batch {
			var err error
			switch o.kind {
			case opCreate:
				id := o.obj.(*api.Task).GetServiceId()
				if _, ok := standing[id]; !ok {
					standing[id] = tx.GetService(id) != nil
				}
				if !standing[id] {
					continue
				}
				err = tx.Create(o.obj)
			case opUpdate:
				err = tx.Update(o.obj)
			case opDelete:
				err = tx.Delete(o.obj)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("commit %d writes: %w", len(batch), err)
	}
	return nil
}
