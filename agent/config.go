package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/spectemplate"
	"google.golang.org/grpc"
)

// Defaults for the Config fields left zero.
const (
	// DefaultHeartbeatPeriod is used until the dispatcher names a period.
	DefaultHeartbeatPeriod = 5 * time.Second
	// DefaultReconnectMin and DefaultReconnectMax bound the exponential
	// backoff between session attempts.
	DefaultReconnectMin = 100 * time.Millisecond
	DefaultReconnectMax = 5 * time.Second
	// DefaultStatusInterval is the least time between two status batches
	// of steps before RUNNING; changes within it are coalesced per
	// replica. RUNNING and ended states go at once.
	DefaultStatusInterval = 100 * time.Millisecond
)

// ImageLoader loads an OCI image archive into this node's image store
// (the containerd runtime implements it).
type ImageLoader interface {
	LoadImage(ctx context.Context, r io.Reader) ([]string, error)
}

// Config is what an Agent is made from.
type Config struct {
	// NodeID and NodeName identify this node (JACO_NODE_* of replicas).
	NodeID, NodeName string
	// Dir is the agent's state directory: agent.db, replicas/<task id>/,
	// logs/<task id>.log.
	Dir string
	// Dial connects to a node's address (mutual TLS, made by the node).
	Dial func(ctx context.Context, addr string) (*grpc.ClientConn, error)
	// ManagerConn, when set, is the connection to a manager's address
	// that sessions use, shared with the node's own calls to that manager
	// (its role check), so the agent does not close it: a node then keeps
	// one connection to its manager, not two, and a manager holds one
	// per node, each about 44 kB of its heap (docs/bench/largestore.md).
	// When nil, each session dials its own and closes it.
	ManagerConn func(addr string) (*grpc.ClientConn, error)
	// Managers are the addresses to try first; the list the dispatcher
	// last sent, kept in the db, is tried before them after a restart.
	Managers []string
	// ManagersChanged, when set, is called with the dispatcher's list of
	// managers each time it differs from the one kept: a manager moved,
	// joined or left. It runs on the session's goroutine.
	ManagersChanged func(addrs []string)
	// Runtimes run replicas: a spec with an image needs "containerd", one
	// with a bundle "hooks".
	Runtimes []exec.Runtime
	// Description reports the machine at session start (default
	// MachineDescription of Runtimes).
	Description func() *api.NodeDescription
	// Overlay, when set, is handed this node and the other nodes' overlay
	// ends from every session message (docs/adr/0026). It must not block.
	Overlay func(self *api.Node, peers []*api.OverlayPeer)
	// Networks, when set, is handed this node, the networks it holds a
	// block of and their services' endpoints from every session message
	// (docs/adr/0026). It must not block.
	Networks func(self *api.Node, networks []*api.Network, endpoints []*api.ServiceEndpoint)
	// RemovedVolumes, when set, is handed the volumes removed from the
	// cluster that lived on this node (Node.removed_volumes) from every
	// session message, for their directories to go
	// (docs/adr/0061-volumes.md). It must not block.
	RemovedVolumes func(refs []*api.VolumeRef)
	// VolumeMoves, when set, is handed the volume copies this node takes
	// part in (Node.volume_moves) from every session message that brings
	// the node (docs/adr/0064-volume-move.md). It must not block.
	VolumeMoves func(orders []*api.VolumeMoveOrder)
	// Disconnected, when set, is called each time a session the
	// dispatcher opened ends (not when the agent stops): what Overlay and
	// Networks last got is stale until the next session message. It must
	// not block.
	Disconnected func()
	Logger       *slog.Logger

	// ReconnectMin and ReconnectMax bound the backoff between session
	// attempts (defaults DefaultReconnectMin, DefaultReconnectMax).
	ReconnectMin, ReconnectMax time.Duration
	// StatusInterval is the least time between status batches unless a
	// replica runs or ends (default DefaultStatusInterval).
	StatusInterval time.Duration
	// MaxConcurrentStarts bounds the replicas preparing or starting at
	// once (default two per CPU).
	MaxConcurrentStarts int
}

func (c *Config) validate() error {
	switch {
	case c.NodeID == "":
		return errors.New("agent config: no node id")
	case c.Dir == "":
		return errors.New("agent config: no state dir")
	case c.Dial == nil:
		return errors.New("agent config: no dial function")
	}
	return nil
}

func (c *Config) fillDefaults() {
	if c.MaxConcurrentStarts <= 0 {
		c.MaxConcurrentStarts = 2 * runtime.NumCPU()
	}
	if c.Description == nil {
		rts := c.Runtimes
		c.Description = func() *api.NodeDescription { return MachineDescription(rts) }
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ReconnectMin <= 0 {
		c.ReconnectMin = DefaultReconnectMin
	}
	if c.ReconnectMax < c.ReconnectMin {
		c.ReconnectMax = max(DefaultReconnectMax, c.ReconnectMin)
	}
	if c.StatusInterval <= 0 {
		c.StatusInterval = DefaultStatusInterval
	}
}

func (c *Config) dbPath() string              { return filepath.Join(c.Dir, "agent.db") }
func (c *Config) replicasDir() string         { return filepath.Join(c.Dir, "replicas") }
func (c *Config) logsDir() string             { return filepath.Join(c.Dir, "logs") }
func (c *Config) replicaDir(id string) string { return filepath.Join(c.replicasDir(), id) }

// imageLoader is the first of runtimes that can load images (nil: none).
func imageLoader(runtimes []exec.Runtime) ImageLoader {
	for _, rt := range runtimes {
		if l, ok := rt.(ImageLoader); ok {
			return l
		}
	}
	return nil
}

// LogPath is where the replica id's output is kept under an agent state
// dir.
func LogPath(dir, id string) string { return filepath.Join(dir, "logs", id+".log") }

// MachineDescription describes this machine: hostname, CPUs (in
// billionths) and total memory, and the names of runtimes.
func MachineDescription(runtimes []exec.Runtime) *api.NodeDescription {
	host, _ := os.Hostname()
	d := &api.NodeDescription{
		Hostname:  host,
		Resources: &api.Resources{NanoCpus: int64(runtime.NumCPU()) * 1e9, MemoryBytes: memTotal()},
		Platform:  &api.Platform{Os: runtime.GOOS, Architecture: spectemplate.Architecture(runtime.GOARCH)},
	}
	for _, rt := range runtimes {
		d.Runtimes = append(d.Runtimes, rt.Name())
		if l, ok := rt.(exec.SlotLimited); ok && rt.Name() == exec.RuntimeContainerd {
			d.ContainerSlots = uint32(l.Slots())
		}
	}
	return d
}

// memTotal reads MemTotal from /proc/meminfo (0 when it cannot).
func memTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return parseMemTotal(data)
}

func parseMemTotal(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 2 || string(fields[0]) != "MemTotal:" {
			continue
		}
		kb, err := strconv.ParseInt(string(fields[1]), 10, 64)
		if err != nil {
			return 0
		}
		return kb * 1024
	}
	return 0
}

// validTaskID refuses ids that would escape the state dir when used as a
// file name.
func validTaskID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) {
		return fmt.Errorf("task id %q is not a plain name", id)
	}
	return nil
}
