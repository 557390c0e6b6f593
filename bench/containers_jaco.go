package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/containerd/containerd/v2/client"
	"google.golang.org/protobuf/types/known/durationpb"

	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
	"github.com/jaco-project/jaco/api"
	jclient "github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/internal/testcluster"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// jacoSubnet is the node's container subnet: the upper half of the /24
// (a derived /28 holds only 13 containers).
const jacoSubnet = "198.18.0.128/25"

// jacoResult is one `service create --replicas N` measured.
type jacoResult struct {
	N int `json:"n"`
	// FromCreate: agent's RUNNING timestamp − just before CreateService.
	FromCreate latStats `json:"from_create"`
	// FromServiceCreatedAt: RUNNING − service.meta.created_at (leader).
	FromServiceCreatedAt latStats `json:"from_service_created_at"`
	// FromTaskCreated: RUNNING − the replica's task.meta.created_at.
	FromTaskCreated latStats `json:"from_task_created"`
	// SeenByClient: first ListTasks poll (every 100 ms) showing running −
	// just before CreateService (results before WatchService was used;
	// kept to read old results.json files).
	SeenByClient latStats `json:"seen_by_client,omitzero"`
	// SeenByWatch: the WatchService message showing the replica running
	// (what `jaco service create` follows) − just before CreateService.
	SeenByWatch latStats `json:"seen_by_watch"`
	// WatchLag: that message − the agent's RUNNING timestamp: how long the
	// report takes from the agent to a waiting client.
	WatchLag latStats `json:"watch_lag"`
	// RawWatchMS and RawLagMS are SeenByWatch's and WatchLag's samples,
	// pooled over rounds in the summary.
	RawWatchMS []float64 `json:"raw_watch_ms"`
	RawLagMS   []float64 `json:"raw_lag_ms"`
	// Phases, from jacod's "replica status" log lines (ms resolution).
	Phases      map[string]latStats `json:"phases"`
	CreateRPCMS float64             `json:"create_rpc_ms"`
	TotalS      float64             `json:"total_s"`
	RawMS       []float64           `json:"raw_ms"`
}

// jacoNode is the single jacod under test.
type jacoNode struct {
	o    containersOpts
	dir  string
	p    *testcluster.Process
	m    *jacoMember
	cl   *jclient.Client
	ctrd *client.Client // the node's containerd namespace, to see containers go
}

func startJacoNode(ctx context.Context, o containersOpts, address, archive string) (*jacoNode, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	n := &jacoNode{o: o, dir: filepath.Join(o.work, "jaco", "n1")}
	if err := os.MkdirAll(n.dir, 0o700); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	n.p = newProc("jacod", o.jacod, filepath.Join(o.work, "jaco", "jacod.log"),
		"--data-dir", n.dir, "--listen-addr", addr, "--node-name", "bench",
		"--containerd-address", address, "--container-subnet", jacoSubnet)
	n.m = &jacoMember{name: "bench", dir: n.dir, addr: addr, p: n.p}
	// The client floors' netns.NewNetNS ends the threads it locks; jacod
	// survives that only because testcluster forks it from a thread of its
	// own (Process.Start says why).
	if err := startProc(n.p); err != nil {
		return nil, err
	}
	if err := n.setup(ctx, address, archive); err != nil {
		n.close()
		return nil, err
	}
	return n, nil
}

func (n *jacoNode) setup(ctx context.Context, address, archive string) error {
	c := &jacoCluster{members: []*jacoMember{n.m}}
	if err := c.waitUp(ctx, n.m); err != nil {
		return err
	}
	if err := c.init(ctx); err != nil {
		return err
	}
	cl, err := jclient.New(jclient.WithSocket(datadir.Dir(n.dir).Socket()))
	if err != nil {
		return err
	}
	n.cl = cl
	// The agent starts once the node is in a cluster; load the image
	// through it as an operator would.
	err = waitfor.Until(ctx, 60*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		out, err := exec.CommandContext(ctx, n.o.jaco, "--data-dir", n.dir, "image", "load", archive).CombinedOutput()
		if err != nil {
			return fmt.Errorf("jaco image load: %w: %s", err, out)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = waitfor.Until(ctx, 60*time.Second, 100*time.Millisecond, func(ctx context.Context) error {
		nodes, err := n.cl.ListNodes(ctx, nil)
		if err != nil {
			return err
		}
		for _, nd := range nodes {
			if nd.GetId() == n.m.nodeID && nd.GetStatus().GetState() == api.NodeStatusState_NODE_STATUS_STATE_READY {
				return nil
			}
		}
		return errors.New("node not ready yet")
	})
	if err != nil {
		return err
	}
	names, err := ctrd.NamesFor(n.m.nodeID, jacoSubnet)
	if err != nil {
		return err
	}
	n.ctrd, err = client.New(address, client.WithDefaultNamespace(names.Namespace))
	return err
}

func (n *jacoNode) close() {
	if n.cl != nil {
		n.cl.Close()
	}
	if n.ctrd != nil {
		n.ctrd.Close()
	}
	stopProc(n.p)
}

// measure creates a service of N replicas, waits until all run, reads
// their timestamps, then removes the service and waits for its
// containers to be gone.
func (n *jacoNode) measure(ctx context.Context, round int) (*jacoResult, error) {
	name := fmt.Sprintf("bench-%d", round)
	spec := &api.ServiceSpec{
		Name:     name,
		Image:    benchImage,
		Command:  []string{"sleep", "3600"},
		Replicas: uint64(n.o.replicas),
		// busybox sleep as PID 1 ignores SIGINT and SIGQUIT: no need to
		// wait minutes for the stop ladder at removal.
		StopGracePeriod:  durationpb.New(100 * time.Millisecond),
		AbortGracePeriod: durationpb.New(100 * time.Millisecond),
	}
	logOff := fileSize(n.p.LogPath())
	t0 := time.Now()
	resp, err := n.cl.Control.CreateService(ctx, &api.CreateServiceRequest{Spec: spec})
	if err != nil {
		return nil, fmt.Errorf("create service: %w", err)
	}
	tAck := time.Now()
	// Follow the service as `jaco service create` does: WatchService from
	// the create's answer on, noting when each replica shows running.
	seen, err := n.watchRunning(ctx, name)
	var tasks []*api.Task
	if err == nil {
		var listed []*api.Task
		listed, err = n.cl.ListTasks(ctx, &api.ListTasksRequest{Service: name})
		for _, t := range listed {
			if _, ok := seen[t.GetId()]; ok && t.GetDesiredState() == api.TaskState_TASK_STATE_RUNNING {
				tasks = append(tasks, t)
			}
		}
	}
	// Remove whatever happened, so the next round (or the end) is clean.
	defer func() {
		if rerr := n.remove(ctx, name); rerr != nil {
			log.Printf("containers: remove %s: %v", name, rerr)
		}
	}()
	if err != nil {
		return nil, err
	}
	res := &jacoResult{N: len(tasks), CreateRPCMS: ms(tAck.Sub(t0))}
	svcCreated := resp.GetService().GetMeta().GetCreatedAt().AsTime()
	var fromCreate, fromSvc, fromTask, fromSeen, lag []int64
	var last time.Time
	for _, t := range tasks {
		running := t.GetStatus().GetTimestamp().AsTime()
		if running.After(last) {
			last = running
		}
		fromCreate = append(fromCreate, int64(running.Sub(t0)))
		fromSvc = append(fromSvc, int64(running.Sub(svcCreated)))
		fromTask = append(fromTask, int64(running.Sub(t.GetMeta().GetCreatedAt().AsTime())))
		fromSeen = append(fromSeen, int64(seen[t.GetId()].Sub(t0)))
		lag = append(lag, int64(seen[t.GetId()].Sub(running)))
		res.RawMS = append(res.RawMS, ms(running.Sub(t0)))
		res.RawWatchMS = append(res.RawWatchMS, ms(seen[t.GetId()].Sub(t0)))
		res.RawLagMS = append(res.RawLagMS, ms(seen[t.GetId()].Sub(running)))
	}
	res.FromCreate = summarize(fromCreate)
	res.FromServiceCreatedAt = summarize(fromSvc)
	res.FromTaskCreated = summarize(fromTask)
	res.SeenByWatch = summarize(fromSeen)
	res.WatchLag = summarize(lag)
	res.TotalS = last.Sub(t0).Seconds()
	res.Phases, err = replicaPhases(n.p.LogPath(), logOff, t0, tasks)
	if err != nil {
		log.Printf("containers: phases from the jacod log: %v", err)
	}
	return res, nil
}

// remove removes the service and waits until its tasks and containers
// are gone.
func (n *jacoNode) remove(ctx context.Context, name string) error {
	ctx = context.WithoutCancel(ctx)
	if _, err := n.cl.Control.RemoveService(ctx, &api.RemoveServiceRequest{Service: name}); err != nil {
		return err
	}
	return waitfor.Until(ctx, 5*time.Minute, 250*time.Millisecond, func(ctx context.Context) error {
		// The service is gone at once; its tasks go once stopped.
		listed, err := n.cl.ListTasks(ctx, nil)
		if err != nil {
			return err
		}
		left := 0
		for _, t := range listed {
			if t.GetServiceName() == name {
				left++
			}
		}
		cs, err := n.ctrd.Containers(ctx)
		if err != nil {
			return err
		}
		if left > 0 || len(cs) > 0 {
			return fmt.Errorf("%d tasks and %d containers left", left, len(cs))
		}
		return nil
	})
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// watchRunning follows service name through WatchService until every one
// of its n.o.replicas slots shows a running replica, and returns when each
// replica was first seen running. A replica that failed ends it with an
// error.
func (n *jacoNode) watchRunning(ctx context.Context, name string) (map[string]time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	stream, err := n.cl.Control.WatchService(ctx, &api.WatchServiceRequest{Service: name})
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", name, err)
	}
	seen := map[string]time.Time{}
	for {
		msg, err := stream.Recv()
		if err != nil {
			return nil, fmt.Errorf("watch %s: %d of %d replicas running: %w", name, len(seen), n.o.replicas, err)
		}
		now := time.Now()
		for _, sl := range msg.GetSlots() {
			switch st := sl.GetState(); {
			case st == api.TaskState_TASK_STATE_RUNNING:
				if _, ok := seen[sl.GetTaskId()]; !ok {
					seen[sl.GetTaskId()] = now
				}
			case st > api.TaskState_TASK_STATE_RUNNING:
				return nil, fmt.Errorf("replica %s: %s: %s", sl.GetTaskId(), st, sl.GetMessage())
			}
		}
		if len(seen) >= n.o.replicas {
			return seen, nil
		}
	}
}
