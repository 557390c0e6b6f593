package main

import (
	"context"

	"github.com/jaco-project/jaco/internal/testcluster"
)

// writeFunc makes one write and returns once it is acknowledged.
type writeFunc func(ctx context.Context) error

// cluster is a three-member group of one system (jaco or etcd) running on
// loopback, as the benchmarks drive it.
type cluster interface {
	// system is "jaco" or "etcd".
	system() string
	// size is the number of members.
	size() int
	// memberName names member i.
	memberName(i int) string
	// pids are the running members' process ids (0 for a stopped one).
	pids() []int
	// proc is member i's process, for the faults the failover benchmark
	// sends it.
	proc(i int) *testcluster.Process
	// leader returns the index of the member every live member agrees
	// leads; an error while they do not agree.
	leader(ctx context.Context) (int, error)
	// term is the highest raft term among the live members: every
	// election raises it.
	term(ctx context.Context) (uint64, error)
	// writers returns n independent connections to member i, each a
	// writeFunc, and a function closing them.
	writers(ctx context.Context, i, n int) ([]writeFunc, func(), error)
	// failoverWriter returns a writer that spreads writes over the members
	// other than skip (skip < 0: all), as a client configured with them
	// would, and a function closing it.
	failoverWriter(ctx context.Context, skip int) (writeFunc, func(), error)
	// kill sends SIGKILL to member i and reaps it.
	kill(i int)
	// restart starts member i again on its data dir.
	restart(i int) error
	// healthy returns nil once every member runs, all agree on one
	// leader, every member is a voter and a write through each member is
	// acknowledged.
	healthy(ctx context.Context) error
	// close stops every member; the data dirs are left to the caller.
	close()
}
