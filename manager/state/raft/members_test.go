package raft

import (
	"testing"

	"github.com/jaco-project/jaco/api"
)

// Every change to the member list closes the channel a watcher took
// before it, and only that one: the manager closes its connections to a
// moved member's old address at once (MembersChanged).
func TestMembershipWatchSeesEveryChange(t *testing.T) {
	m := newMembership()
	for _, change := range []struct {
		name string
		do   func()
	}{
		{"add", func() { m.add(&api.RaftMember{RaftId: 1, Address: "198.18.0.1:7000"}) }},
		{"move", func() { m.add(&api.RaftMember{RaftId: 1, Address: "198.18.0.5:7000"}) }},
		{"remove", func() { m.remove(1) }},
		{"reset", func() { m.reset([]*api.RaftMember{{RaftId: 2}}, nil) }},
	} {
		w := m.watch()
		select {
		case <-w:
			t.Fatalf("before %s: the watch is closed already", change.name)
		default:
		}
		change.do()
		select {
		case <-w:
		default:
			t.Fatalf("%s: the watch taken before it is not closed", change.name)
		}
	}
}
