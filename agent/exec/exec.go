// Package exec is the boundary between the agent and the runtimes that run
// replicas (containerd/ and hooks/). The agent drives one Controller per
// replica through prepare → start → wait → stop → remove and reports each
// step; a runtime knows nothing of sessions, managers or the store.
//
// A runtime must survive the agent: a replica keeps running when jacod
// exits, and a Controller made for a replica that is already running (the
// agent restarted) adopts it — Start returns ErrAlreadyStarted and Wait
// follows the running replica.
package exec

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jaco-project/jaco/api"
)

// ErrAlreadyStarted is returned by Start when the replica is running
// already (adopted after an agent restart); the agent goes on to Wait.
var ErrAlreadyStarted = errors.New("replica already started")

// ErrNotFound is returned by Wait or Exec when the runtime has no replica
// for the task (it was never started here, or it is removed).
var ErrNotFound = errors.New("replica not found")

// Env names the variables every replica gets (both runtimes).
const (
	EnvServiceName = "JACO_SERVICE_NAME"
	EnvReplicaID   = "JACO_REPLICA_ID"
	EnvSlot        = "JACO_SLOT"
	EnvNodeID      = "JACO_NODE_ID"
	EnvNodeName    = "JACO_NODE_NAME"
)

// Replica is what a runtime is told about one replica.
type Replica struct {
	Task *api.Task
	// NodeID and NodeName identify the node running it (for the JACO_
	// variables).
	NodeID, NodeName string
	// Dir is a directory private to this replica, kept until Remove
	// returns; runtimes keep their per-replica state here.
	Dir string
	// LogPath is the file the replica's stdout and stderr are appended to;
	// it outlives the agent process (written by the shim, not by jacod).
	LogPath string
	// Files are the replica's secrets and configs with their content,
	// held in memory only (see File); Prepare refuses a replica lacking
	// one its spec names (CheckFiles).
	Files []File
}

// Env returns the JACO_ variables for r, to append to the spec's env.
func (r Replica) Env() []string {
	return []string{
		EnvServiceName + "=" + r.Task.GetServiceName(),
		EnvReplicaID + "=" + r.Task.GetId(),
		EnvSlot + "=" + strconv.FormatUint(r.Task.GetSlot(), 10),
		EnvNodeID + "=" + r.NodeID,
		EnvNodeName + "=" + r.NodeName,
	}
}

// Runtime names, as Runtime.Name returns them: a spec with an image needs
// RuntimeContainerd, one with a bundle RuntimeHooks.
const (
	RuntimeContainerd = "containerd"
	RuntimeHooks      = "hooks"
)

// Runtime runs replicas of one kind.
type Runtime interface {
	// Name is RuntimeContainerd or RuntimeHooks (reported in
	// NodeDescription.runtimes).
	Name() string
	// Controller returns the controller of r. It does no I/O.
	Controller(r Replica) (Controller, error)
}

// SlotLimited is implemented by a runtime that can run only so many
// replicas at once on this node (containerd: one address of the container
// subnet each). The node reports it; the scheduler places no more.
type SlotLimited interface {
	Slots() int
}

// Exit is how a replica ended.
type Exit struct {
	Code int
	// Signal is set when a signal ended it ("SIGKILL").
	Signal string
	At     time.Time
}

// Controller drives one replica. Every method is idempotent and may be
// called after an agent restart with the replica in any state.
type Controller interface {
	// Prepare makes what the replica needs on the node (image unpacked,
	// bundle written, hook prepare run with its retries) without starting it.
	Prepare(ctx context.Context) error
	// Start starts the replica, or returns ErrAlreadyStarted when it runs.
	Start(ctx context.Context) error
	// Wait blocks until the replica ends (or ctx ends).
	Wait(ctx context.Context) (Exit, error)
	// Stop runs the stop ladder: SIGINT, the spec's stop grace period
	// (default 2 m), SIGQUIT, the abort grace period (default 30 s),
	// SIGKILL, and an error saying the replica failed to stop in time
	// when it took SIGKILL. It returns once the replica is not running.
	Stop(ctx context.Context) error
	// Remove deletes everything Prepare and Start left (container,
	// snapshot, network, bundle; the hooks runtime runs cleanup).
	Remove(ctx context.Context) error
	// Address is the host a health check dials (the replica's IP, or
	// 127.0.0.1 for processes).
	Address(ctx context.Context) (string, error)
	// Exec runs argv in the replica's context (a command health check)
	// and returns its exit code.
	Exec(ctx context.Context, argv []string) (int, error)
}
