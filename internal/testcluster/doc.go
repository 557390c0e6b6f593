// Package testcluster runs jacod processes the way docs/design.md §14
// ("Testing on one machine") describes, for every harness that needs real
// daemons: the integration tests, the nemesis runner (internal/chaos) and
// the benchmark (bench/, built as jaco-bench).
//
// The network is a Hub, a per-caller network namespace holding a Linux
// bridge, and Hosts, one namespace each with eth0 at 198.18.0.<n>/25 on
// that bridge. 198.18.0.0/15 is reserved for benchmarking and never
// routed, and nothing of a hub ever appears in the root namespace: the
// bridge lives in the hub's namespace because a Docker engine on the
// machine sets the root namespace's FORWARD policy to DROP, and each veth
// pair is created inside the hub with its peer end straight in the host's.
// Namespace names carry this process's pid and a random part, so parallel
// tests and parallel runs never collide and a later run can tell the
// leftovers of a dead one from a live one's (NewHub sweeps the former).
//
// A Process is a program (jacod, etcd, a registry) started with its
// output appended to a log file and SIGKILL as its parent-death signal,
// on a host (nsenter --net) or in the caller's namespace. It can be
// stopped, killed, paused with SIGSTOP (it keeps its sockets, like a hung
// machine: the kernel has no netem here) and started again on the same
// arguments. Partitions are nftables drop rules inside a host's
// namespace, written by Host.Partition; Host.Heal removes them.
//
// The package does not import "testing": the nemesis runner and the
// benchmark are programs, not tests. Everything takes a context and
// returns errors; the integration tests wrap it in helpers that fail the
// test and register cleanups.
package testcluster
