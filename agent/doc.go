// Package agent is what every node runs to execute the replicas assigned
// to it (DESIGN.md §7): a session with the leader's dispatcher, one
// controller per replica, a local database to re-adopt running replicas
// after a restart, and the runtimes under agent/exec. It arrives with the
// workers issue; the package exists now so the layout and import graph
// (cmd → node → manager/agent → store → api) are fixed from the start.
package agent
