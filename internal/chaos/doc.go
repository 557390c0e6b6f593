// Package chaos is the nemesis runner of docs/design.md §14: it forms a
// cluster of three (or five) jacod managers, each a real process in a network
// namespace of its own (198.18.0.0/15 addresses only), drives concurrent
// clients on every manager while a named nemesis kills, pauses or
// partitions managers, and checks what the clients saw with
// internal/linearcheck.
//
// Two workloads run side by side in one cluster. The register workload
// keeps a few services whose update policy's parallelism is a register:
// clients read it linearizably and write it with compare-and-set on the
// meta.version they last saw (a field whose change replaces no replica, so
// nothing but the clients writes the service). The set workload creates
// tiny services, each with a name no other add uses; after the faults heal
// the runner lists the services linearizably and every acknowledged add
// must be there, nothing never sent, nothing twice.
//
// Clients reach their manager through its unix socket from the root
// namespace, so a partition cuts managers from each other and never a
// client from its manager: a client of a cut-off manager sees what an
// operator on that machine would. A failed run names its seed and its
// nemesis schedule and leaves the history and porcupine's visualization in
// the evidence directory, so it can be studied and replayed.
//
// Everything here needs root (network namespaces, nftables); the
// integration package's TestChaos runs it in CI, `make chaos` for long.
package chaos
