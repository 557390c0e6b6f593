package main

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/internal/waitfor"
	"github.com/jaco-project/jaco/node"
)

// simulatedNodes is how many nodes the test simulates.
const simulatedNodes = 20

// The simulator's nodes join a real manager (in this process, on
// loopback), become READY, run the replicas placed on them, and, after
// the simulator stops and their heartbeats lapse, come back under the same
// node ids from the state directory, with their replicas still running.
func TestSimulatedNodesJoinRunAndReturn(t *testing.T) {
	dir := t.TempDir()
	mgr := startManager(t, dir)
	cl, err := client.New(client.WithSocket(datadir.Dir(dir).Socket()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.Cluster.Init(ctx, &api.InitClusterRequest{}); err != nil {
		t.Fatalf("init: %v", err)
	}

	o := simOpts{manager: mgr, socket: datadir.Dir(dir).Socket(), count: simulatedNodes,
		state: filepath.Join(t.TempDir(), "nodes"), cpus: 8e9, memory: 16 << 30, roleCheck: time.Second}
	first := startSimulator(t, o)
	waitfor.Eventually(t, 20*time.Second, func() error { return nodesReady(ctx, cl, simulatedNodes) })
	ids := first.sim.nodeIDs()
	if len(ids) != simulatedNodes {
		t.Fatalf("the simulator runs %d nodes, want %d", len(ids), simulatedNodes)
	}

	const replicas = 2 * simulatedNodes
	_, err = cl.Control.CreateService(ctx, &api.CreateServiceRequest{Spec: &api.ServiceSpec{
		Name: "sim", Image: "jaco.local/none:latest", Replicas: replicas,
		Placement: &api.Placement{Constraints: []string{"node.role==worker"}},
	}})
	if err != nil {
		t.Fatalf("create service: %v", err)
	}
	waitfor.Eventually(t, 20*time.Second, func() error { return serviceRunning(ctx, cl, "sim", replicas, ids) })
	if got := first.sim.running.Load(); got != replicas {
		t.Errorf("the simulator counts %d replicas running, want %d", got, replicas)
	}
	// Each replica's RUNNING went in a status report the dispatcher took.
	waitfor.Eventually(t, 5*time.Second, func() error {
		if got := first.sim.reports.Load(); got < replicas {
			return fmt.Errorf("the simulator counts %d statuses reported, want at least %d", got, replicas)
		}
		return nil
	})

	// Gone: with a 300 ms heartbeat period, the manager marks the nodes
	// down within a second or so.
	first.stop()
	waitfor.Eventually(t, 20*time.Second, func() error { return nodesDown(ctx, cl) })

	o.socket = "" // no join token: the nodes must not join again
	second := startSimulator(t, o)
	waitfor.Eventually(t, 20*time.Second, func() error { return nodesReady(ctx, cl, simulatedNodes) })
	if again := second.sim.nodeIDs(); !maps.Equal(again, ids) {
		t.Errorf("the second run's nodes %v, want the first's %v", again, ids)
	}
	waitfor.Eventually(t, 20*time.Second, func() error { return serviceRunning(ctx, cl, "sim", replicas, ids) })
	waitfor.Eventually(t, 5*time.Second, func() error {
		if got := second.sim.running.Load(); got != replicas {
			return fmt.Errorf("the second run counts %d replicas running, want %d adopted", got, replicas)
		}
		return nil
	})
}

// startManager runs a jacod node in this process, listening on loopback,
// and returns its TCP address.
func startManager(t *testing.T, dir string) string {
	t.Helper()
	n, err := node.New(node.Config{DataDir: dir, ListenAddr: "127.0.0.1:0", NodeName: "m", NoOverlay: true,
		HeartbeatPeriod: 300 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return n.TCPAddr().String()
}

type runningSim struct {
	sim  *simulator
	stop func()
}

func startSimulator(t *testing.T, o simOpts) *runningSim {
	t.Helper()
	s := newSimulator(o, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	r := &runningSim{sim: s}
	stopped := false
	r.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("simulator: %v", err)
		}
	}
	t.Cleanup(r.stop)
	return r
}

// simStates counts the simulated nodes by state.
func simStates(ctx context.Context, cl *client.Client) (map[api.NodeStatusState]int, error) {
	nodes, err := cl.ListNodes(ctx, &api.ListNodesRequest{})
	if err != nil {
		return nil, err
	}
	states := map[api.NodeStatusState]int{}
	for _, n := range nodes {
		if strings.HasPrefix(n.GetHostname(), "sim-") {
			states[n.GetStatus().GetState()]++
		}
	}
	return states, nil
}

func nodesReady(ctx context.Context, cl *client.Client, want int) error {
	states, err := simStates(ctx, cl)
	if err != nil {
		return err
	}
	if states[api.NodeStatusState_NODE_STATUS_STATE_READY] != want || len(states) != 1 {
		return fmt.Errorf("simulated nodes by state %v, want %d READY", states, want)
	}
	return nil
}

func nodesDown(ctx context.Context, cl *client.Client) error {
	states, err := simStates(ctx, cl)
	if err != nil {
		return err
	}
	if states[api.NodeStatusState_NODE_STATUS_STATE_READY] != 0 {
		return fmt.Errorf("simulated nodes by state %v, want none READY", states)
	}
	return nil
}

// serviceRunning checks that the service's replicas all run, each on a
// node of nodes (by name).
func serviceRunning(ctx context.Context, cl *client.Client, name string, want int, nodes map[string]string) error {
	onSim := map[string]bool{}
	for _, id := range nodes {
		onSim[id] = true
	}
	tasks, err := cl.ListTasks(ctx, &api.ListTasksRequest{})
	if err != nil {
		return err
	}
	running := 0
	for _, tk := range tasks {
		if tk.GetDesiredState() != api.TaskState_TASK_STATE_RUNNING {
			continue
		}
		if !onSim[tk.GetNodeId()] {
			return fmt.Errorf("replica %s is on node %q, not a simulated one", tk.GetId(), tk.GetNodeId())
		}
		if tk.GetStatus().GetState() == api.TaskState_TASK_STATE_RUNNING {
			running++
		}
	}
	if running != want {
		return fmt.Errorf("service %s: %d replicas running of %d tasks, want %d", name, running, len(tasks), want)
	}
	return nil
}
