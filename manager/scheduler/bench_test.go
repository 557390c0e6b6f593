package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/placement"
	"github.com/jaco-project/jaco/manager/state/raftstoretest"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

// BenchmarkPlacement measures placements committed through raft: a lone
// raft member with its WAL (sealed, fsync'ed) under b.TempDir(), the store
// as its applier, NODES simulated nodes (READY objects in the store, three
// zones) and one service of REPLICAS pending tasks spread over the zones.
// Each iteration starts a scheduler on that store and times it until every
// task is committed ASSIGNED: the first pass reads the store, builds the
// node index, decides, and commits in chunked proposals.
//
// Reported: placements/s; decide-ms (the time spent choosing nodes) and
// commit-ms (the time spent in proposals); heap-MB (HeapInuse after a GC,
// scheduler still running with its index) and heap-delta-MB (against the
// same measure before it started). Then, in the same run and directory, the
// reference: the same number of PENDING→ASSIGNED task updates of the same
// size committed through the same raft member in the same chunks, with no
// scheduling decision (ref-writes/s), and sched/ref, the ratio of the two
// durations, and ref-heap-delta-MB, the heap growth the same writes cause
// without a scheduler.
func BenchmarkPlacement(b *testing.B) {
	for _, c := range []struct{ replicas, nodes int }{
		{100_000, 1_000},
		{100_000, 5_000},
		{1_000, 100_000},
		{100_000, 100_000}, // target ≤ 20 s through raft (docs/bench/scheduler.md)
	} {
		b.Run(fmt.Sprintf("replicas=%d/nodes=%d", c.replicas, c.nodes), func(b *testing.B) {
			benchPlacement(b, c.replicas, c.nodes)
		})
	}
}

func benchPlacement(b *testing.B, replicas, nodes int) {
	var elapsed, decide, commit, ref time.Duration
	var heapBefore, heapAfter uint64
	var refHeapDelta float64
	b.StopTimer()
	for range b.N {
		st, spec, closeStore := placementStore(b, replicas, nodes)
		heapBefore = raftstoretest.HeapInuse()
		b.StartTimer()

		var mu sync.Mutex
		assigned := 0
		done, drained := make(chan struct{}), make(chan struct{})
		runCtx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		s := New(st, WithLogger(slog.New(slog.DiscardHandler)), WithBatchObserver(func(bs BatchStats) {
			mu.Lock()
			defer mu.Unlock()
			if assigned < replicas {
				decide += bs.Decide
				commit += bs.Commit
			}
			assigned += bs.Assigned
			if assigned-bs.Assigned < replicas && assigned >= replicas {
				close(done)
			}
			if assigned == replicas+1 {
				close(drained)
			}
		}))
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); s.Run(runCtx) }()
		waitClosed(b, done, "all replicas assigned")
		elapsed += time.Since(start)
		b.StopTimer()
		// The scheduler takes events in order: once a task created now is
		// assigned, it has consumed the events of its own writes too, and
		// the heap shows its steady state.
		sentinel := pendingTasks(imageSpec("sentinel"), 1)[0]
		storetest.Create(b, st, sentinel)
		waitClosed(b, drained, "sentinel assigned")
		heapAfter = raftstoretest.HeapInuse()
		cancel()
		wg.Wait()
		checkAssigned(b, st, spec.GetName(), replicas)
		closeStore()

		st, _, closeStore = placementStore(b, replicas, nodes)
		refBefore := raftstoretest.HeapInuse()
		ref += referenceWrites(b, st, spec.GetName(), nodes)
		refHeapDelta = mb(raftstoretest.HeapInuse()) - mb(refBefore)
		closeStore()
	}
	per := float64(b.N)
	b.ReportMetric(float64(replicas)*per/elapsed.Seconds(), "placements/s")
	b.ReportMetric(ms(decide)/per, "decide-ms")
	b.ReportMetric(ms(commit)/per, "commit-ms")
	b.ReportMetric(ms(elapsed-decide-commit)/per, "load-ms")
	b.ReportMetric(mb(heapAfter), "heap-MB")
	b.ReportMetric(mb(heapAfter)-mb(heapBefore), "heap-delta-MB")
	b.ReportMetric(float64(replicas)*per/ref.Seconds(), "ref-writes/s")
	b.ReportMetric(refHeapDelta, "ref-heap-delta-MB")
	b.ReportMetric(elapsed.Seconds()/ref.Seconds(), "sched/ref")
}

func waitClosed(b *testing.B, ch <-chan struct{}, what string) {
	b.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Minute):
		b.Fatalf("no %s after 5 minutes", what)
	}
}

// placementStore opens a fresh raft-backed store holding nodes READY
// nodes in three zones and one service with replicas PENDING tasks, and
// the function that closes it.
func placementStore(b *testing.B, replicas, nodes int) (*store.Store, *api.ServiceSpec, func()) {
	b.Helper()
	st, closeStore := raftstoretest.Open(b)
	objs := make([]store.Object, 0, nodes+replicas+1)
	for i := range nodes {
		n := readyNode(fmt.Sprintf("node-%06d", i), "zone", fmt.Sprintf("zone-%d", i%3))
		n.Description.Resources = &api.Resources{NanoCpus: 64e9, MemoryBytes: 256 * gib}
		n.Description.Runtimes = []string{placement.RuntimeContainerd, placement.RuntimeHooks}
		objs = append(objs, n)
	}
	spec := benchSpec("svc")
	objs = append(objs, service(spec))
	objs = append(objs, tasksAsObjects(pendingTasks(spec, replicas))...)
	createChunked(b, st, objs)
	return st, spec, closeStore
}

// benchSpec is a containerd service with small reservations, spread over
// zones.
func benchSpec(name string) *api.ServiceSpec {
	spec := imageSpec(name)
	spec.Image = "registry.example/team/" + name + ":1.0"
	spec.Reservations = &api.Resources{NanoCpus: 1e7, MemoryBytes: 16 << 20}
	spec.Placement.Spread = []string{"node.labels.zone"}
	return spec
}

// referenceWrites commits the same PENDING→ASSIGNED updates the
// scheduler would, round-robin over the nodes, in the scheduler's chunks
// and with as many proposals in flight, with no decision, and returns how
// long the commits took.
func referenceWrites(b *testing.B, st *store.Store, service string, nodes int) time.Duration {
	b.Helper()
	var tasks []*api.Task
	st.View(func(tx store.ReadTx) { tasks = tx.ListTasksByService(service) })
	sem := make(chan struct{}, maxInflightProposals)
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	start := time.Now()
	for i := 0; i < len(tasks); i += DefaultMaxTasksPerProposal {
		chunk := tasks[i:min(i+DefaultMaxTasksPerProposal, len(tasks))]
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			err := st.Update(context.Background(), func(tx *store.Tx) error {
				for j, t := range chunk {
					t.NodeId = fmt.Sprintf("node-%06d", (i+j)%nodes)
					t.Status = &api.TaskStatus{State: api.TaskState_TASK_STATE_ASSIGNED,
						Message: "assigned to node host-" + t.NodeId, Timestamp: timestamppb.Now()}
					if err := tx.Update(t); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	select {
	case err := <-errs:
		b.Fatalf("reference writes: %v", err)
	default:
	}
	return elapsed
}

func checkAssigned(b *testing.B, st *store.Store, service string, want int) {
	b.Helper()
	n := 0
	st.View(func(tx store.ReadTx) {
		for _, t := range tx.ListTasksByService(service) {
			if t.GetStatus().GetState() == api.TaskState_TASK_STATE_ASSIGNED && t.GetNodeId() != "" {
				n++
			}
		}
	})
	if n != want {
		b.Fatalf("%d of %d tasks assigned in the store", n, want)
	}
}

// createChunked creates objs in proposals of the scheduler's chunk size.
func createChunked(b *testing.B, st *store.Store, objs []store.Object) {
	b.Helper()
	for i := 0; i < len(objs); i += DefaultMaxTasksPerProposal {
		storetest.Create(b, st, objs[i:min(i+DefaultMaxTasksPerProposal, len(objs))]...)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mb(n uint64) float64        { return float64(n) / (1 << 20) }

// BenchmarkDecide times one placement pass on a warm index, without raft:
// what a running leader spends choosing nodes when a service of REPLICAS
// tasks arrives, next to NODES nodes that each already run ten tasks of
// other services. The assignments are undone after each pass (untimed).
func BenchmarkDecide(b *testing.B) {
	for _, c := range []struct{ replicas, nodes int }{
		{100_000, 1_000},
		{100_000, 5_000},
		{1_000, 100_000},
		{100_000, 100_000}, // target ≤ 20 s through raft (docs/bench/scheduler.md)
	} {
		b.Run(fmt.Sprintf("replicas=%d/nodes=%d", c.replicas, c.nodes), func(b *testing.B) {
			ix := newIndex()
			other := benchSpec("other")
			for i := range c.nodes {
				n := readyNode(fmt.Sprintf("node-%06d", i), "zone", fmt.Sprintf("zone-%d", i%3))
				n.Description.Resources = &api.Resources{NanoCpus: 64e9, MemoryBytes: 256 * gib}
				ix.setNode(n)
				for j := range 10 {
					ix.setTask(runningTask(fmt.Sprintf("other-%d-%d", i, j), other, n.Id))
				}
			}
			tasks := pendingTasks(benchSpec("svc"), c.replicas)
			for _, t := range tasks {
				ix.setTask(t)
			}
			s := New(nil)
			b.ResetTimer()
			for range b.N {
				ix.recheckAll = true
				writes := s.decide(ix)
				b.StopTimer()
				if len(writes) != c.replicas {
					b.Fatalf("%d writes, want %d", len(writes), c.replicas)
				}
				s.undo(ix, writes)
				b.StartTimer()
			}
			b.ReportMetric(float64(b.N)*float64(c.replicas)/b.Elapsed().Seconds(), "placements/s")
		})
	}
}
