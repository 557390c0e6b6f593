// Package datadir names what a node keeps in its data dir
// ($JACO_DATA_DIR, docs/operator-guide.md "What is on disk"): the one place
// the layout is written down, for the daemon and for the tools that work
// on a stopped node's data dir (restore, tests).
package datadir

import "path/filepath"

// Default is the data dir of a jacod started without --data-dir or
// $JACO_DATA_DIR, and so the one whose socket jaco dials by default.
const Default = "/var/lib/jaco"

// Dir is a data dir.
type Dir string

// Socket is the trusted local socket.
func (d Dir) Socket() string { return d.join("jaco.sock") }

// Lock is the file whose flock says a jacod uses the data dir.
func (d Dir) Lock() string { return d.join("jacod.lock") }

// Node holds the node's certificate files and data keys.
func (d Dir) Node() string { return d.join("node") }

// DataKeys are the keys sealing the raft state (sealed themselves with the
// unlock key while autolock is on).
func (d Dir) DataKeys() string { return filepath.Join(d.Node(), "raft-dek.key") }

// JoinManagers lists the managers a worker's join named.
func (d Dir) JoinManagers() string { return filepath.Join(d.Node(), "managers.json") }

// OverlayKey is the node's WireGuard private key (sealed with the data
// keys while autolock is on).
func (d Dir) OverlayKey() string { return filepath.Join(d.Node(), "overlay.key") }

// Raft holds a manager's WAL and snapshots.
func (d Dir) Raft() string { return d.join("raft") }

// Agent is the agent's state: its database, replica dirs and logs.
func (d Dir) Agent() string { return d.join("agent") }

// ContainerdState is the containerd runtime's state (runc, network
// namespaces, IP leases, CNI configuration).
func (d Dir) ContainerdState() string { return d.join("runtime", "containerd") }

// OverlayLeases is where replicas' addresses on overlay networks are
// leased (both runtimes take them from the node's blocks, so they share
// it; the containerd runtime's default).
func (d Dir) OverlayLeases() string { return filepath.Join(d.ContainerdState(), "overlay") }

// HooksNetns is where the hooks runtime mounts the network namespaces of
// replicas on overlay networks.
func (d Dir) HooksNetns() string { return d.join("runtime", "hooks", "netns") }

// Volumes is the default volumes dir: one directory per named volume
// living on this node (agent/volumes, docs/adr/0061-volumes.md).
func (d Dir) Volumes() string { return d.join("volumes") }

// OperatorToken is where a node that formed a cluster from flags leaves
// the operator token.
func (d Dir) OperatorToken() string { return d.join("operator-token") }

func (d Dir) join(elem ...string) string {
	return filepath.Join(append([]string{string(d)}, elem...)...)
}
