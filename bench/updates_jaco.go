package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	jclient "github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/internal/testcluster"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// updatesService is the benchmark's service name.
const updatesService = "bench-updates"

// completionPoll is how often the client looks whether the update is done.
const completionPoll = 20 * time.Millisecond

// updatesNode is one jacod that is the manager and runs the replicas as
// hook bundles (no containerd address).
type updatesNode struct {
	o  updatesOpts
	m  *jacoMember
	p  *testcluster.Process
	cl *jclient.Client
}

func startUpdatesNode(ctx context.Context, o updatesOpts) (*updatesNode, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(o.work, "jaco", "n1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	n := &updatesNode{o: o}
	n.p = newProc("jacod", o.jacod, filepath.Join(o.work, "jaco", "jacod.log"),
		"--data-dir", dir, "--listen-addr", addr, "--node-name", "bench")
	n.m = &jacoMember{name: "bench", dir: dir, addr: addr, p: n.p}
	if err := startProc(n.p); err != nil {
		return nil, err
	}
	if err := n.setup(ctx); err != nil {
		n.close(ctx)
		return nil, err
	}
	return n, nil
}

func (n *updatesNode) setup(ctx context.Context) error {
	c := &jacoCluster{members: []*jacoMember{n.m}}
	if err := c.waitUp(ctx, n.m); err != nil {
		return err
	}
	if err := c.init(ctx); err != nil {
		return err
	}
	cl, err := jclient.New(jclient.WithSocket(datadir.Dir(n.m.dir).Socket()))
	if err != nil {
		return err
	}
	n.cl = cl
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
	spec := &api.ServiceSpec{
		Name:     updatesService,
		Replicas: uint64(n.o.replicas),
		Bundle:   &api.HookBundle{Files: map[string][]byte{api.HookLaunch: []byte(updateLaunch)}},
	}
	if _, err := n.cl.Control.CreateService(ctx, &api.CreateServiceRequest{Spec: spec}); err != nil {
		return fmt.Errorf("create service: %w", err)
	}
	log.Printf("updates: service of %d replicas created, waiting until all run", n.o.replicas)
	_, err = n.waitRunning(ctx, nil)
	return err
}

// waitRunning waits until the service has its replicas RUNNING, none of
// them in old, and returns them.
func (n *updatesNode) waitRunning(ctx context.Context, old map[string]bool) ([]*api.Task, error) {
	var tasks []*api.Task
	err := waitfor.Until(ctx, 2*time.Minute, completionPoll, func(ctx context.Context) error {
		var err error
		tasks, err = n.runningTasks(ctx, old)
		return err
	})
	return tasks, err
}

// runningTasks returns the service's replicas when exactly the wanted
// number run, none of them in old, and no old one runs any more.
func (n *updatesNode) runningTasks(ctx context.Context, old map[string]bool) ([]*api.Task, error) {
	listed, err := n.cl.ListTasks(ctx, &api.ListTasksRequest{Service: updatesService})
	if err != nil {
		return nil, err
	}
	var running []*api.Task
	oldRunning := 0
	for _, t := range listed {
		if t.GetStatus().GetState() != api.TaskState_TASK_STATE_RUNNING {
			continue
		}
		if old[t.GetId()] {
			oldRunning++
			continue
		}
		if t.GetDesiredState() == api.TaskState_TASK_STATE_RUNNING {
			running = append(running, t)
		}
	}
	if len(running) != n.o.replicas || oldRunning > 0 {
		return nil, fmt.Errorf("%d new replicas running, %d old still running", len(running), oldRunning)
	}
	return running, nil
}

// measure rolls every replica under the policy c and times it from just
// before UpdateService to the first poll that sees update_status
// COMPLETED and every replica new and RUNNING.
func (n *updatesNode) measure(ctx context.Context, c updateConfig) (*updateSample, error) {
	resp, err := n.cl.Control.GetService(ctx, &api.GetServiceRequest{Service: updatesService})
	if err != nil {
		return nil, fmt.Errorf("get service: %w", err)
	}
	svc := resp.GetService()
	before, err := n.waitRunning(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("before the update: %w", err)
	}
	old := map[string]bool{}
	for _, t := range before {
		old[t.GetId()] = true
	}
	spec := proto.Clone(svc.GetSpec()).(*api.ServiceSpec)
	spec.Update = &api.UpdatePolicy{Parallelism: uint64(c.Parallelism), Monitor: durationpb.New(c.Monitor)}
	spec.ForceUpdate++
	s := &updateSample{Kind: "jaco", Config: c, LoadAvg: loadAverage()}
	logOff := fileSize(n.p.LogPath())

	t0 := time.Now()
	if _, err := n.cl.Control.UpdateService(ctx, &api.UpdateServiceRequest{
		Service: updatesService, Version: svc.GetMeta().GetVersion(), Spec: spec,
	}); err != nil {
		return nil, fmt.Errorf("update service: %w", err)
	}
	s.RPCMS = ms(time.Since(t0))
	var tasks []*api.Task
	var gaveUp error
	err = waitfor.Until(ctx, 5*time.Minute, completionPoll, func(ctx context.Context) error {
		s.Polls++
		resp, err := n.cl.Control.GetService(ctx, &api.GetServiceRequest{Service: updatesService})
		if err != nil {
			return err
		}
		cur := resp.GetService()
		st := cur.GetUpdateStatus()
		if cur.GetSpec().GetForceUpdate() != spec.GetForceUpdate() {
			return errors.New("update not applied yet")
		}
		switch st.GetState() {
		case api.UpdateState_UPDATE_STATE_COMPLETED:
		case api.UpdateState_UPDATE_STATE_UPDATING, api.UpdateState_UPDATE_STATE_UNSPECIFIED:
			return fmt.Errorf("update %s", st.GetState())
		default:
			// A pause or rollback will not complete: stop waiting.
			gaveUp = fmt.Errorf("update %s: %s", st.GetState(), st.GetMessage())
			return nil
		}
		if tasks, err = n.runningTasks(ctx, old); err != nil {
			return err
		}
		s.LeaderS = st.GetCompletedAt().AsTime().Sub(st.GetStartedAt().AsTime()).Seconds()
		return nil
	})
	if err := errors.Join(err, gaveUp); err != nil {
		return nil, err
	}
	s.TotalS = time.Since(t0).Seconds()
	s.Replaced = len(tasks)
	phases, err := replicaPhases(n.p.LogPath(), logOff, t0, tasks)
	if err != nil {
		log.Printf("updates: phases from the jacod log: %v", err)
	}
	s.Phases = map[string]latStats{}
	for k, v := range maps.All(phases) {
		s.Phases[strings.Replace(k, "create call", "update call", 1)] = v
	}
	if stop, err := n.stopPhase(ctx, old, tasks); err != nil {
		log.Printf("updates: stop phase: %v", err)
	} else {
		s.Phases["2a task created → old replica ended (stop)"] = stop
	}
	if gap, ok := turnGap(tasks); ok {
		s.Phases["5 a batch RUNNING → next batch's task created"] = gap
	}
	return s, nil
}

// turnGap is, for every new task created after another new one ran, the
// time from the latest such RUNNING (agent's timestamp) to its creation
// (leader's): how long the update machine takes to notice that a batch is
// done and start the next. False when no task waited on another
// (parallelism ≥ replicas).
func turnGap(tasks []*api.Task) (latStats, bool) {
	var ds []int64
	for _, t := range tasks {
		created := t.GetMeta().GetCreatedAt().AsTime()
		var latest time.Time
		for _, u := range tasks {
			if run := u.GetStatus().GetTimestamp().AsTime(); !run.After(created) && run.After(latest) {
				latest = run
			}
		}
		if !latest.IsZero() {
			ds = append(ds, int64(created.Sub(latest)))
		}
	}
	if len(ds) == 0 {
		return latStats{}, false
	}
	return summarize(ds), true
}

// stopPhase is, per slot, the time from the new task's creation to the
// old replica's end as its agent reported it (stop-first: the new one
// starts only after that).
func (n *updatesNode) stopPhase(ctx context.Context, old map[string]bool, tasks []*api.Task) (latStats, error) {
	listed, err := n.cl.ListTasks(ctx, &api.ListTasksRequest{Service: updatesService})
	if err != nil {
		return latStats{}, err
	}
	ended := map[uint64]time.Time{}
	for _, t := range listed {
		if old[t.GetId()] && t.GetStatus().GetState() > api.TaskState_TASK_STATE_RUNNING {
			ended[t.GetSlot()] = t.GetStatus().GetTimestamp().AsTime()
		}
	}
	var ds []int64
	for _, t := range tasks {
		if at, ok := ended[t.GetSlot()]; ok {
			ds = append(ds, int64(at.Sub(t.GetMeta().GetCreatedAt().AsTime())))
		}
	}
	if len(ds) == 0 {
		return latStats{}, errors.New("no ended old replica found")
	}
	return summarize(ds), nil
}

// close removes the service (its replicas outlive jacod otherwise), then
// stops jacod.
func (n *updatesNode) close(ctx context.Context) {
	if n.cl != nil {
		ctx := context.WithoutCancel(ctx)
		if _, err := n.cl.Control.RemoveService(ctx, &api.RemoveServiceRequest{Service: updatesService}); err != nil {
			log.Printf("updates: remove service: %v", err)
		} else {
			err := waitfor.Until(ctx, time.Minute, 100*time.Millisecond, func(ctx context.Context) error {
				// The service is gone at once; its tasks once stopped.
				listed, err := n.cl.ListTasks(ctx, nil)
				if err != nil {
					return err
				}
				left := 0
				for _, t := range listed {
					if t.GetServiceName() == updatesService {
						left++
					}
				}
				if left > 0 {
					return fmt.Errorf("%d tasks left", left)
				}
				return nil
			})
			if err != nil {
				log.Printf("updates: wait for the replicas to go: %v", err)
			}
		}
		n.cl.Close()
	}
	stopProc(n.p)
}
