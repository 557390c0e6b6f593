package raft

import (
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// decodeSnapshot decodes an api.RaftSnapshot as proto.Unmarshal does,
// faster for what encodeSnapshot writes: the store's runs (one
// RaftSnapshot.store field each) are decoded on every core at once and
// their lists joined in order, and tasks whose specs have the same bytes
// (the same service and spec version) get one decoded spec between them,
// each core decoding such a spec once (specShare).
// Restarted with 100 000 tasks, a manager spent most of the time before
// it led decoding the snapshot (0.66 s of CPU) and finding each task's
// spec a copy to share (api.Specs: 0.40 s, encoding every spec again to
// compare it); docs/design.md §7.
//
// The specs are shared as the store shares them: the decoding is for
// Store.Restore, which shares them anyway, and nothing changes a stored
// task's spec in place.
func decodeSnapshot(data []byte) (*api.RaftSnapshot, error) {
	var rest []byte // every field but the store's runs, as it came
	var runs [][]byte
	for b := data; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("decode snapshot: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, fmt.Errorf("decode snapshot: field %d: %w", num, protowire.ParseError(m))
		}
		if num == raftSnapshotStore && typ == protowire.BytesType {
			run, _ := protowire.ConsumeBytes(b[n:])
			runs = append(runs, run)
		} else {
			rest = append(rest, b[:n+m]...)
		}
		b = b[n+m:]
	}
	rs := &api.RaftSnapshot{}
	if err := proto.Unmarshal(rest, rs); err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	if len(runs) == 0 {
		return rs, nil
	}
	parts := make([]decodedRun, len(runs))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(runs)) {
		wg.Go(func() {
			var specs specShare // the tasks of this worker's runs share specs
			for i := int(next.Add(1) - 1); i < len(runs) && !failed.Load(); i = int(next.Add(1) - 1) {
				parts[i] = decodeRun(&specs, runs[i])
				if parts[i].err != nil {
					failed.Store(true)
				}
			}
		})
	}
	wg.Wait()
	for i, p := range parts {
		if p.err != nil {
			return nil, fmt.Errorf("decode snapshot: store run %d: %w", i, p.err)
		}
		if len(p.store.ProtoReflect().GetUnknown()) > 0 {
			// A newer member's fields: proto.Unmarshal keeps them.
			rs = &api.RaftSnapshot{}
			if err := proto.Unmarshal(data, rs); err != nil {
				return nil, fmt.Errorf("decode snapshot: %w", err)
			}
			return rs, nil
		}
	}
	rs.Store = joinRuns(parts)
	return rs, nil
}

// decodedRun is one store run decoded, with the bytes of each of its
// tasks' specs (specs[i] is Tasks[i]'s; nil for a task without one, and
// specs nil when specShare did not find them).
type decodedRun struct {
	store *api.StoreSnapshot
	specs [][]byte
	err   error
}

func decodeRun(specs *specShare, run []byte) decodedRun {
	var d decodedRun
	d.store, d.specs, d.err = specs.decodeRun(run)
	return d
}

// joinRuns puts the runs' lists end to end, in order, and points every
// task at the first decoded spec of its service and version with the same
// bytes.
func joinRuns(parts []decodedRun) *api.StoreSnapshot {
	joined := &api.StoreSnapshot{}
	all := reflect.ValueOf(joined).Elem()
	for f := range all.NumField() {
		if !all.Type().Field(f).IsExported() || all.Field(f).Kind() != reflect.Slice {
			continue
		}
		total := 0
		for _, p := range parts {
			total += reflect.ValueOf(p.store).Elem().Field(f).Len()
		}
		if total == 0 {
			continue
		}
		list := reflect.MakeSlice(all.Field(f).Type(), 0, total)
		for _, p := range parts {
			list = reflect.AppendSlice(list, reflect.ValueOf(p.store).Elem().Field(f))
		}
		all.Field(f).Set(list)
	}
	first := map[string]*api.ServiceSpec{}
	var key []byte
	for _, p := range parts {
		if p.specs == nil {
			continue
		}
		for i, t := range p.store.Tasks {
			key = shareSpec(first, key, t, p.specs[i])
		}
	}
	return joined
}

// shareSpec points t at first's spec for t's service, spec version and
// spec bytes, or makes t's that one; key is scratch space, returned.
func shareSpec(first map[string]*api.ServiceSpec, key []byte, t *api.Task, spec []byte) []byte {
	if t == nil || t.Spec == nil || spec == nil {
		return key
	}
	key = appendSpecKey(key[:0], t.ServiceId, t.SpecVersion, spec)
	if s, ok := first[string(key)]; ok {
		t.Spec = s
	} else {
		first[string(key)] = t.Spec
	}
	return key
}
