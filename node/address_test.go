package node

import (
	"slices"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
)

// A single manager restarted on a new address records it itself, being
// its own leader (docs/adr/0038): its raft member and its Node move, and
// it keeps its raft id.
func TestSingleManagerMovesItself(t *testing.T) {
	dir := t.TempDir()
	n, stop := startNodeWith(t, Config{DataDir: dir, ListenAddr: "127.0.0.1:0"})
	if _, err := localClient(t, dir).Cluster.Init(ctxT(t), &api.InitClusterRequest{}); err != nil {
		t.Fatal(err)
	}
	old, raftID := n.AdvertiseAddr(), n.Manager().RaftID()
	stop()

	n, _ = startNodeWith(t, Config{DataDir: dir, ListenAddr: "127.0.0.2:0"})
	moved := n.AdvertiseAddr()
	if moved == old {
		t.Fatalf("restarted at %s, the address it had", moved)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		m := n.Manager()
		members := m.RaftMembers()
		node := m.Node(m.NodeID())
		i := slices.IndexFunc(members, func(mem *api.RaftMember) bool { return mem.RaftId == raftID })
		if i >= 0 && members[i].Address == moved && node != nil && node.Address == moved && len(members) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after a restart at %s (was %s): raft members %v, node %v", moved, old, members, node)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
