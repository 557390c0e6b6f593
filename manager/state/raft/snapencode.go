package raft

import (
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// A large snapshot is encoded in paced chunks: after each pacedChunk
// bytes the encoder rests pacedRest times as long as the chunk took, so
// it takes at most a fifth of a core however large the store. Encoded
// in one go, a 25 MB store (230 000 join tokens) took most of a core
// for over a second on each manager at once, and writes stalled behind
// it for up to 800 ms (docs/adr/0049; docs/bench/cluster.md). A snapshot is
// not urgent: the log it replaces stays in memory until it is done.
// A snapshot smaller than pacedChunk never rests.
const (
	pacedChunk = 1 << 20
	pacedRest  = 4
)

// restFor is how the encoder rests; tests count the rests.
var restFor = time.Sleep

// objectsPerChunk is how many objects encodeSnapshot encodes at a time.
// One proto.MarshalAppend per object took twice as long as one for the
// whole store.
const objectsPerChunk = 1024

// encodeSnapshot encodes store, members and removed as an
// api.RaftSnapshot: the bytes proto.Marshal gives, up to the order and
// repetition of fields, which the decoder does not mind. The store goes
// out as many RaftSnapshot.store fields, each a StoreSnapshot holding a
// run of objectsPerChunk objects of one list: a decoder merges the
// repeats of a message field into one message, its lists appended. Each
// run is sized as it is encoded, so the whole encoding is paced, resting
// between chunks (pacedChunk) until hurry is set; sizing the store up
// front took a third of the encoding's CPU in one go on every manager at
// once. The lists the store keeps encoded go out in runs too,
// their objects' bytes as they are. sizeHint is the expected size, to
// allocate once.
func encodeSnapshot(store api.FrozenStore, members, removed []*api.RaftMember, hurry *atomic.Bool, sizeHint int) ([]byte, error) {
	// Deterministic: equal specs encode to equal bytes, which is how the
	// decoder finds the tasks that can share one (decodeSnapshot).
	enc := proto.MarshalOptions{Deterministic: true}
	// An empty store first, so that one without objects decodes as present.
	out, err := enc.MarshalAppend(make([]byte, 0, sizeHint+64), &api.RaftSnapshot{Store: &api.StoreSnapshot{}})
	if err != nil {
		return nil, fmt.Errorf("encode snapshot: %w", err)
	}
	chunkStart, chunkFrom := time.Now(), len(out)
	pace := func() {
		if len(out)-chunkFrom >= pacedChunk && !hurry.Load() {
			restFor(pacedRest * time.Since(chunkStart))
			chunkStart, chunkFrom = time.Now(), len(out)
		}
	}

	// Every exported slice of the generated struct is one of its lists of
	// objects (TestEncodeSnapshotCoversEveryList); a run is set through Go
	// reflection as a subslice, where protoreflect appends object by object.
	var run api.StoreSnapshot
	field := &api.RaftSnapshot{Store: &run} // one RaftSnapshot.store field per run
	if store.Objects != nil {
		all, part := reflect.ValueOf(store.Objects).Elem(), reflect.ValueOf(&run).Elem()
		for f := range all.NumField() {
			list := all.Field(f)
			if !all.Type().Field(f).IsExported() || list.Kind() != reflect.Slice {
				continue
			}
			for i := 0; i < list.Len(); i += objectsPerChunk {
				part.Field(f).Set(list.Slice(i, min(i+objectsPerChunk, list.Len())))
				out, err = enc.MarshalAppend(out, field)
				part.Field(f).SetZero()
				if err != nil {
					return nil, fmt.Errorf("encode snapshot: %s from %d: %w", all.Type().Field(f).Name, i, err)
				}
				pace()
			}
		}
	}
	for _, e := range store.Encoded {
		for i := 0; i < len(e.Objects); i += objectsPerChunk {
			objs := e.Objects[i:min(i+objectsPerChunk, len(e.Objects))]
			out = protowire.AppendTag(out, raftSnapshotStore, protowire.BytesType)
			out = protowire.AppendVarint(out, uint64(e.ElementsSize(objs)))
			out = e.AppendElements(out, objs)
			pace()
		}
	}
	out, err = enc.MarshalAppend(out, &api.RaftSnapshot{Members: members, RemovedMembers: removed})
	if err != nil {
		return nil, fmt.Errorf("encode snapshot members: %w", err)
	}
	return out, nil
}
