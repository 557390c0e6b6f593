package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	runc "github.com/containerd/containerd/api/types/runc/options"
	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/netns"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/errdefs"
	gocni "github.com/containerd/go-cni"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
)

// floorNamespace is the containerd namespace the floors' containers live
// in (jaco's node uses its own, derived from its node id).
const floorNamespace = "jaco-bench-floor"

// floorSubnet is the floors' CNI subnet: the lower half of the /24 the
// benchmark may use; jaco's node gets the upper half.
const floorSubnet = "198.18.0.0/25"

// floorResult is one floor measurement of N containers.
type floorResult struct {
	Kind string `json:"kind"` // see floorTitles
	N    int    `json:"n"`
	// Latency is per container, from its own start (sequential) or from
	// the common start (concurrent) to its task started.
	Latency latStats `json:"latency"`
	// Phases split the client floors' latency: netns+container (the
	// jaco controller's Prepare), CNI setup, task create+start.
	Phases map[string]latStats `json:"phases,omitempty"`
	TotalS float64             `json:"total_s"`
	RawMS  []float64           `json:"raw_ms"`
}

// floors measures the reference starts on the shared containerd.
type floors struct {
	o        containersOpts
	address  string
	client   *client.Client
	img      client.Image
	cni      gocni.CNI // jaco's network shape
	bareCNI  gocni.CNI // bridge and host-local only
	runcRoot string
	netnsDir string
	logDir   string

	mu    sync.Mutex
	netns map[string]attachment // container id → its network (client floors)
}

// attachment is a client floor container's network namespace and the CNI
// networks it was attached with.
type attachment struct {
	path string
	cni  gocni.CNI
}

func newFloors(ctx context.Context, o containersOpts, address, archive string) (*floors, error) {
	f := &floors{
		o: o, address: address, netns: map[string]attachment{},
		runcRoot: filepath.Join(o.work, "floor", "runc"),
		netnsDir: filepath.Join(o.work, "floor", "netns"),
		logDir:   filepath.Join(o.work, "floor", "logs"),
	}
	for _, d := range []string{f.runcRoot, f.netnsDir, f.logDir} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, err
		}
	}
	// Imported (and unpacked) the way an operator would with ctr.
	if out, err := exec.CommandContext(ctx, o.ctr, "-a", address, "-n", floorNamespace,
		"images", "import", archive).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ctr images import: %w: %s", err, out)
	}
	c, err := client.New(address, client.WithDefaultNamespace(floorNamespace))
	if err != nil {
		return nil, fmt.Errorf("containerd client: %w", err)
	}
	f.client = c
	if f.img, err = c.GetImage(ctx, benchImage); err != nil {
		c.Close()
		return nil, fmt.Errorf("floor image: %w", err)
	}
	// The same network shape as a jaco node's (bridge, host-local,
	// portmap, firewall), on its own bridge and subnet.
	names := ctrd.Names{Network: "jaco-bench-floor", Bridge: "jbfloor0", Subnet: netip.MustParsePrefix(floorSubnet)}
	conf, err := names.CNIConfList(filepath.Join(o.work, "floor", "ipam"))
	if err != nil {
		c.Close()
		return nil, err
	}
	bare, err := bareConfList(conf)
	if err != nil {
		c.Close()
		return nil, err
	}
	for _, x := range []struct {
		cni  *gocni.CNI
		conf []byte
	}{{&f.cni, conf}, {&f.bareCNI, bare}} {
		*x.cni, err = gocni.New(gocni.WithPluginDir(ctrd.DefaultCNIBinDirs), gocni.WithInterfacePrefix("eth"),
			gocni.WithConfListBytes(x.conf), gocni.WithLoNetwork)
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("floor cni: %w", err)
		}
	}
	return f, nil
}

func (f *floors) close() {
	_ = f.removeAll(context.Background())
	f.client.Close()
}

// measure runs one floor of N containers, then removes them.
func (f *floors) measure(ctx context.Context, kind string, round int) (*floorResult, error) {
	n := f.o.replicas
	res := &floorResult{Kind: kind, N: n}
	lat := make([]int64, n)
	phases := map[string][]int64{}
	var phMu sync.Mutex
	addPhases := func(p map[string]time.Duration) {
		phMu.Lock()
		defer phMu.Unlock()
		for k, d := range p {
			phases[k] = append(phases[k], int64(d))
		}
	}
	start := time.Now()
	var err error
	switch kind {
	case "ctr":
		for i := range n {
			id := fmt.Sprintf("ctr-%d-%03d", round, i)
			t0 := time.Now()
			if err = f.ctrRun(ctx, id); err != nil {
				break
			}
			lat[i] = int64(time.Since(t0))
		}
	case "client", "client-bare-cni":
		cni := f.cni
		if kind == "client-bare-cni" {
			cni = f.bareCNI
		}
		for i := range n {
			id := fmt.Sprintf("cl-%d-%03d", round, i)
			t0 := time.Now()
			var p map[string]time.Duration
			if p, err = f.clientRun(ctx, id, cni); err != nil {
				break
			}
			lat[i] = int64(time.Since(t0))
			addPhases(p)
		}
	case "client-concurrent", "client-4-at-once":
		// All from one start; the second at most 4 in flight (2 per
		// core here), the bound an agent could keep.
		limit := n
		if kind == "client-4-at-once" {
			limit = 4
		}
		sem := make(chan struct{}, limit)
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				p, err := f.clientRun(ctx, fmt.Sprintf("cc-%d-%03d", round, i), f.cni)
				lat[i] = int64(time.Since(start))
				errs[i] = err
				if err == nil {
					addPhases(p)
				}
			}()
		}
		wg.Wait()
		err = errors.Join(errs...)
	}
	res.TotalS = time.Since(start).Seconds()
	if err == nil {
		err = f.checkRunning(ctx, n)
	}
	if rerr := f.removeAll(ctx); rerr != nil {
		err = errors.Join(err, fmt.Errorf("remove floor containers: %w", rerr))
	}
	if err != nil {
		return nil, err
	}
	res.Latency = summarize(lat)
	for _, v := range lat {
		res.RawMS = append(res.RawMS, float64(v)/1e6)
	}
	if len(phases) > 0 {
		res.Phases = map[string]latStats{}
		for k, v := range phases {
			res.Phases[k] = summarize(v)
		}
	}
	return res, nil
}

// ctrRun is the floor of containerd's own CLI: `ctr run -d` with
// overlayfs and the output to a log file, as jaco's shim does. ctr
// returns once the task is started. Its container gets a fresh, empty
// network namespace (no CNI).
func (f *floors) ctrRun(ctx context.Context, id string) error {
	out, err := exec.CommandContext(ctx, f.o.ctr, "-a", f.address, "-n", floorNamespace,
		"run", "-d", "--snapshotter", ctrd.Snapshotter, "--runc-root", f.runcRoot,
		"--log-uri", "file://"+filepath.Join(f.logDir, id+".log"),
		benchImage, id, "sleep", "3600").CombinedOutput()
	if err != nil {
		return fmt.Errorf("ctr run %s: %w: %s", id, err, out)
	}
	return nil
}

// clientRun does in this process what jaco's containerd controller does
// for a replica (Prepare: network namespace and container with its
// snapshot; Start: CNI setup, task with a log file, start), timing each
// phase.
func (f *floors) clientRun(ctx context.Context, id string, cni gocni.CNI) (map[string]time.Duration, error) {
	t0 := time.Now()
	ns, err := netns.NewNetNS(f.netnsDir)
	if err != nil {
		return nil, fmt.Errorf("netns: %w", err)
	}
	f.mu.Lock()
	f.netns[id] = attachment{path: ns.GetPath(), cni: cni}
	f.mu.Unlock()
	ctr, err := f.client.NewContainer(ctx, id,
		client.WithImage(f.img),
		client.WithSnapshotter(ctrd.Snapshotter),
		client.WithNewSnapshot(id, f.img),
		client.WithRuntime(ctrd.RuncRuntime, &runc.Options{Root: f.runcRoot}),
		client.WithNewSpec(
			oci.WithImageConfig(f.img),
			oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: ns.GetPath()}),
			oci.WithProcessArgs("sleep", "3600"),
		),
	)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", id, err)
	}
	t1 := time.Now()
	if _, err := cni.Setup(ctx, id, ns.GetPath()); err != nil {
		return nil, fmt.Errorf("cni setup %s: %w", id, err)
	}
	t2 := time.Now()
	task, err := ctr.NewTask(ctx, cio.LogFile(filepath.Join(f.logDir, id+".log")),
		func(_ context.Context, _ *client.Client, ti *client.TaskInfo) error {
			ti.Options = &runc.Options{Root: f.runcRoot}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", id, err)
	}
	if err := task.Start(ctx); err != nil {
		return nil, fmt.Errorf("start %s: %w", id, err)
	}
	t3 := time.Now()
	return map[string]time.Duration{
		"netns+container":   t1.Sub(t0),
		"cni setup":         t2.Sub(t1),
		"task create+start": t3.Sub(t2),
	}, nil
}

// checkRunning makes sure the floor's n containers all run.
func (f *floors) checkRunning(ctx context.Context, n int) error {
	cs, err := f.client.Containers(ctx)
	if err != nil {
		return err
	}
	running := 0
	for _, c := range cs {
		t, err := c.Task(ctx, nil)
		if err != nil {
			continue
		}
		if s, err := t.Status(ctx); err == nil && s.Status == client.Running {
			running++
		}
	}
	if running != n {
		return fmt.Errorf("%d of %d floor containers running", running, n)
	}
	return nil
}

// removeAll deletes every floor container: task (killed), network,
// namespace, container and snapshot.
func (f *floors) removeAll(ctx context.Context) error {
	ctx = context.WithoutCancel(ctx)
	cs, err := f.client.Containers(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		if t, err := c.Task(ctx, nil); err == nil {
			if _, err := t.Delete(ctx, client.WithProcessKill); err != nil && !errdefs.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete task %s: %w", c.ID(), err))
			}
		}
		f.mu.Lock()
		at, ok := f.netns[c.ID()]
		f.mu.Unlock()
		if ok {
			if err := at.cni.Remove(ctx, c.ID(), at.path); err != nil {
				errs = append(errs, fmt.Errorf("cni remove %s: %w", c.ID(), err))
			}
			if err := netns.LoadNetNS(at.path).Remove(); err != nil {
				errs = append(errs, fmt.Errorf("netns %s: %w", c.ID(), err))
			}
			f.mu.Lock()
			delete(f.netns, c.ID())
			f.mu.Unlock()
		}
		if err := c.Delete(ctx, client.WithSnapshotCleanup); err != nil && !errdefs.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete container %s: %w", c.ID(), err))
		}
	}
	return errors.Join(errs...)
}

// bareConfList keeps only the bridge plugin (with host-local addresses)
// of a jaco network config and turns its masquerading off: no iptables
// work per container, to show what portmap, firewall and ipMasq cost.
// Same network name, bridge and lease directory, so it must not be used
// while containers of the full config are attached.
func bareConfList(conf []byte) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(conf, &m); err != nil {
		return nil, fmt.Errorf("bare cni config: %w", err)
	}
	plugins, ok := m["plugins"].([]any)
	if !ok || len(plugins) == 0 {
		return nil, errors.New("bare cni config: no plugins")
	}
	bridge, ok := plugins[0].(map[string]any)
	if !ok || bridge["type"] != "bridge" {
		return nil, errors.New("bare cni config: first plugin is not the bridge")
	}
	bridge["ipMasq"] = false
	m["plugins"] = []any{bridge}
	return json.Marshal(m)
}
