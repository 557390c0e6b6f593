package manager

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/raftstoretest"
	"github.com/jaco-project/jaco/manager/state/store"
)

// BenchmarkPlacementMetrics is the cost of metrics to placement: a lone
// manager with every leader subsystem, 1 000 ready nodes in its store,
// and a service of 50 000 replicas created at once; timed until the
// scheduler has committed every replica ASSIGNED (the orchestrator's task
// creations included). With metrics=on the manager's collectors are
// gathered every scrapeEvery meanwhile, as a daemon serving --metrics-addr
// is scraped; metrics=off gathers nothing. Run the two alternately
// (-count) and compare placements/s within the run (docs/bench/metrics.md).
func BenchmarkPlacementMetrics(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("metrics=%s", map[bool]string{false: "off", true: "on"}[on]), func(b *testing.B) {
			var elapsed time.Duration
			var scrapes int
			for range b.N {
				d, n := placeWithMetrics(b, 1_000, 50_000, on)
				elapsed += d
				scrapes += n
			}
			b.ReportMetric(float64(50_000*b.N)/elapsed.Seconds(), "placements/s")
			b.ReportMetric(float64(scrapes)/float64(b.N), "scrapes")
		})
	}
}

// scrapeEvery is a scraper's period in BenchmarkPlacementMetrics: fifteen
// times Prometheus's default, so the cost bounds an operator's.
const scrapeEvery = time.Second

func placeWithMetrics(b *testing.B, nodes, replicas int, scrape bool) (time.Duration, int) {
	b.StopTimer()
	dir, sealer := raftstoretest.Bootstrap(b, &api.InternalRaftRequest{})
	// Nodes hold no session: a heartbeat period of an hour keeps the
	// dispatcher from marking them down during the run.
	m, err := Open(dir, sealer, nil, WithLogger(slog.New(slog.DiscardHandler)),
		WithTickInterval(10*time.Millisecond), WithHeartbeatPeriod(time.Hour))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := m.Stop(); err != nil {
			b.Errorf("stop manager: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := m.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < nodes; i += 500 {
		err := m.store.Update(ctx, func(tx *store.Tx) error {
			for j := i; j < min(i+500, nodes); j++ {
				if err := tx.Create(benchNode(j)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}

	assigned := make(chan struct{})
	events := m.store.Watch(ctx, store.ObjectType[*api.Task]())
	go func() {
		n := 0
		for e := range events {
			if e.Kind == store.EventUpdate && e.Object.(*api.Task).GetStatus().GetState() == api.TaskState_TASK_STATE_ASSIGNED &&
				e.Old.(*api.Task).GetStatus().GetState() == api.TaskState_TASK_STATE_PENDING {
				if n++; n == replicas {
					close(assigned)
				}
			}
		}
	}()
	scrapes := 0
	stopScrape := func() {}
	if scrape {
		reg := prometheus.NewRegistry()
		reg.MustRegister(m.Collector())
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(scrapeEvery)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
				}
				if _, err := reg.Gather(); err != nil {
					b.Errorf("gather: %v", err)
				}
				scrapes++
			}
		})
		stopScrape = func() { close(done); wg.Wait() }
	}

	b.StartTimer()
	start := time.Now()
	err = m.store.Update(ctx, func(tx *store.Tx) error {
		return tx.Create(&api.Service{Id: "svc", Meta: &api.Meta{}, Spec: &api.ServiceSpec{
			Name: "svc", Image: "registry.example/team/svc:1.0", Replicas: uint64(replicas),
			Reservations: &api.Resources{NanoCpus: 1e7, MemoryBytes: 16 << 20},
			Placement:    &api.Placement{Spread: []string{"node.labels.zone"}},
		}})
	})
	if err != nil {
		b.Fatal(err)
	}
	select {
	case <-assigned:
	case <-ctx.Done():
		b.Fatal("replicas not all assigned within 5 minutes")
	}
	elapsed := time.Since(start)
	b.StopTimer()
	stopScrape()
	return elapsed, scrapes
}

// benchNode is a READY worker with room for many replicas, in one of
// three zones.
func benchNode(i int) *api.Node {
	return &api.Node{
		Id: fmt.Sprintf("node-%06d", i), Hostname: fmt.Sprintf("host-%06d", i), Meta: &api.Meta{},
		Role:   api.NodeRole_NODE_ROLE_WORKER,
		Status: &api.NodeStatus{State: api.NodeStatusState_NODE_STATUS_STATE_READY},
		Labels: map[string]string{"zone": fmt.Sprintf("zone-%d", i%3)},
		Description: &api.NodeDescription{
			Resources: &api.Resources{NanoCpus: 64e9, MemoryBytes: 256 << 30},
			Runtimes:  []string{"containerd", "hooks"},
		},
	}
}
