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
// it for up to 800 ms (issue 15; docs/bench/cluster.md). A snapshot is
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
// api.RaftSnapshot: the bytes proto.Marshal gives, up to the order of
// fields, which the decoder does not mind. The store's lists go out
// objectsPerChunk objects at a time, each run encoded as a StoreSnapshot
// holding just them (a message's encodings concatenated decode as one
// message, with its lists appended), resting between chunks
// (pacedChunk) until hurry is set.
func encodeSnapshot(store *api.StoreSnapshot, members, removed []*api.RaftMember, hurry *atomic.Bool) ([]byte, error) {
	// Sizing first sizes every object too: the runs reuse it. Knowing the
	// store's size, its field's header goes first, and the store is
	// encoded in place behind it.
	size := proto.Size(store)
	out := make([]byte, 0, protowire.SizeTag(1)+protowire.SizeBytes(size)+64)
	out = protowire.AppendTag(out, 1, protowire.BytesType) // RaftSnapshot.store
	out = protowire.AppendVarint(out, uint64(size))
	start := len(out)
	sized := proto.MarshalOptions{UseCachedSize: true}
	chunkStart, chunkFrom := time.Now(), start

	// Every exported slice of the generated struct is one of its lists of
	// objects (TestEncodeSnapshotCoversEveryList); a run is set through Go
	// reflection as a subslice, where protoreflect appends object by object.
	var run api.StoreSnapshot
	all, part := reflect.ValueOf(store).Elem(), reflect.ValueOf(&run).Elem()
	for f := range all.NumField() {
		list := all.Field(f)
		if !all.Type().Field(f).IsExported() || list.Kind() != reflect.Slice {
			continue
		}
		for i := 0; i < list.Len(); i += objectsPerChunk {
			part.Field(f).Set(list.Slice(i, min(i+objectsPerChunk, list.Len())))
			var err error
			out, err = sized.MarshalAppend(out, &run)
			part.Field(f).SetZero()
			if err != nil {
				return nil, fmt.Errorf("encode snapshot: %s from %d: %w", all.Type().Field(f).Name, i, err)
			}
			if len(out)-chunkFrom >= pacedChunk && !hurry.Load() {
				restFor(pacedRest * time.Since(chunkStart))
				chunkStart, chunkFrom = time.Now(), len(out)
			}
		}
	}
	if len(out)-start != size {
		return nil, fmt.Errorf("encode snapshot: %d bytes encoded, %d sized", len(out)-start, size)
	}
	out, err := proto.MarshalOptions{}.MarshalAppend(out, &api.RaftSnapshot{Members: members, RemovedMembers: removed})
	if err != nil {
		return nil, fmt.Errorf("encode snapshot members: %w", err)
	}
	return out, nil
}
