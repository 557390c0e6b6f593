package raft

import (
	"testing"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// TestDecodeAheadInOrder: every entry's request comes back in log order,
// across more windows than may wait decoded, nil for an entry without a
// write; an entry that does not decode is an error at that entry, after
// every one before it came back; stop ends the workers however far the
// applier got.
func TestDecodeAheadInOrder(t *testing.T) {
	const count, corrupt = 40 * aheadWindow, 30*aheadWindow + 5
	ents := make([]raftpb.Entry, count)
	for i := range ents {
		ents[i] = raftpb.Entry{Type: raftpb.EntryNormal, Index: uint64(i + 1)}
		if i%7 == 3 {
			continue // raft's empty entry of a new term
		}
		data, err := proto.Marshal(&api.InternalRaftRequest{Id: uint64(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		ents[i].Data = data
	}
	check := func(a *ahead, upTo int) {
		t.Helper()
		for i := range upTo {
			req, err := a.request(i)
			if err != nil {
				t.Fatalf("entry %d: %v", i, err)
			}
			if (req == nil) != (i%7 == 3) || (req != nil && req.Id != uint64(i+1)) {
				t.Fatalf("entry %d: request %v", i, req)
			}
		}
	}
	a := decodeAhead(ents)
	check(a, count)
	a.stop()

	a = decodeAhead(ents)
	check(a, 10) // an applier that fails early
	a.stop()

	ents[corrupt].Data = []byte{0xff}
	a = decodeAhead(ents)
	defer a.stop()
	check(a, corrupt)
	if _, err := a.request(corrupt); err == nil {
		t.Fatalf("entry %d does not decode, and no error came back", corrupt)
	}
}
