// Package monitor is both ends of the node-to-node heartbeats that let the
// leader tell a node cut off from the managers from a dead one
// (docs/adr/0042): Table, kept by every node, records when it last heard
// each node that heartbeats to it; Pinger, run by the agent, heartbeats to
// the monitors the dispatcher named, whether or not the agent holds a
// session with the dispatcher (a partition from the managers is exactly
// when it does not).
package monitor
