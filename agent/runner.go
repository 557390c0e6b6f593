package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/logs"
	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/api/spectemplate"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Reason words the agent puts in TaskStatus.reason.
const (
	ReasonExitCode      = "exit_code"
	ReasonUnhealthy     = "unhealthy"
	ReasonPrepareFailed = "prepare_failed"
	ReasonStartFailed   = "start_failed"
	ReasonReplicaLost   = "replica_lost"
	ReasonNoRuntime     = "no_runtime"
	ReasonInvalidSpec   = reason.InvalidSpec
	// ReasonImagePullDenied and ReasonImagePullFailed replace
	// ReasonPrepareFailed when prepare failed pulling the image.
	ReasonImagePullDenied = reason.ImagePullDenied
	ReasonImagePullFailed = reason.ImagePullFailed
	// ReasonSecretMissing and ReasonConfigMissing replace
	// ReasonPrepareFailed when a secret or config the spec names did not
	// come with the replica's assignment.
	ReasonSecretMissing = reason.SecretMissing
	ReasonConfigMissing = reason.ConfigMissing
)

// prepareReason is the reason word of a failed prepare: the pull's when
// the image could not be pulled, the missing file's when a secret or
// config did not arrive.
func prepareReason(err error) string {
	var pe *exec.PullError
	var mf *exec.MissingFileError
	switch {
	case errors.As(err, &mf) && mf.Secret:
		return ReasonSecretMissing
	case errors.As(err, &mf):
		return ReasonConfigMissing
	case !errors.As(err, &pe):
		return ReasonPrepareFailed
	case pe.Denied:
		return ReasonImagePullDenied
	default:
		return ReasonImagePullFailed
	}
}

// taskRunner owns one replica on this node: one goroutine drives its
// controller through prepare → start → monitor → stop → remove and
// reports each step. Its status only moves forward.
type taskRunner struct {
	w  *worker
	id string

	mu       sync.Mutex
	task     *api.Task       // as the dispatcher last sent it
	status   *api.TaskStatus // the agent's own latest status (may be nil)
	removing bool

	// stopWanted closes when the replica must stop (desired state past
	// RUNNING, or removal); removed when it must also go from the node.
	stopWanted, removed  chan struct{}
	stopOnce, removeOnce sync.Once
}

// newTaskRunner starts from the status t carries.
func newTaskRunner(w *worker, t *api.Task) *taskRunner {
	r := &taskRunner{
		w: w, id: t.GetId(),
		task:       proto.CloneOf(t),
		status:     proto.CloneOf(t.GetStatus()),
		stopWanted: make(chan struct{}),
		removed:    make(chan struct{}),
	}
	if t.GetDesiredState() > api.TaskState_TASK_STATE_RUNNING {
		r.wantStop()
	}
	return r
}

func (r *taskRunner) wantStop() { r.stopOnce.Do(func() { close(r.stopWanted) }) }

// update takes a newer copy of the task from the dispatcher.
func (r *taskRunner) update(t *api.Task) {
	r.mu.Lock()
	// Only what the agent acts on is worth a db write: a COMPLETE set
	// after every reconnection would otherwise rewrite every task.
	changed := t.GetDesiredState() != r.task.GetDesiredState() ||
		t.GetSpecVersion() != r.task.GetSpecVersion() ||
		!proto.Equal(t.GetNotBefore(), r.task.GetNotBefore())
	r.task = proto.CloneOf(t)
	local, removing := r.status, r.removing
	r.mu.Unlock()
	if changed {
		if err := r.persist(); err != nil {
			r.w.log.Error("keep task in agent db", "task_id", r.id, "err", err)
		}
	}
	if t.GetDesiredState() > api.TaskState_TASK_STATE_RUNNING {
		r.wantStop()
	}
	// The cluster is behind what this agent reported (a report lost with
	// an agent restart): say it again.
	if local != nil && !removing && t.GetStatus().GetState() < local.GetState() {
		r.w.statuses.Enqueue(r.id, local)
	}
}

// remove asks the runner to stop the replica and remove it.
func (r *taskRunner) remove() {
	r.mu.Lock()
	r.removing = true
	r.mu.Unlock()
	r.w.statuses.Drop(r.id)
	r.wantStop()
	r.removeOnce.Do(func() { close(r.removed) })
}

// persist writes the task with the agent's status to the db.
func (r *taskRunner) persist() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.removing {
		return nil
	}
	rec := proto.CloneOf(r.task)
	rec.Status = r.status
	return r.w.db.PutTask(rec)
}

func (r *taskRunner) state() api.TaskState {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.status.GetState()
}

// view is the task with the agent's own latest status.
func (r *taskRunner) view() *api.Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := proto.CloneOf(r.task)
	if r.status != nil {
		t.Status = proto.CloneOf(r.status)
	}
	return t
}

// viewState is the state view shows, without copying the task.
func (r *taskRunner) viewState() api.TaskState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status != nil {
		return r.status.GetState()
	}
	return r.task.GetStatus().GetState()
}

func (r *taskRunner) snapshot() *api.Task {
	r.mu.Lock()
	defer r.mu.Unlock()
	return proto.CloneOf(r.task)
}

// report records st as the replica's status, keeps it in the db and
// queues it for the dispatcher. A state not past the current one is
// ignored: a replica only moves forward.
func (r *taskRunner) report(st *api.TaskStatus) {
	r.mu.Lock()
	if st.GetState() <= r.status.GetState() {
		r.mu.Unlock()
		return
	}
	st.Timestamp = timestamppb.New(time.Now())
	r.status = st
	removing := r.removing
	r.mu.Unlock()
	r.w.log.Info("replica status", "task_id", r.id, "state", enumword.Of(st.GetState()), "reason", st.GetReason(), "message", st.GetMessage())
	if err := r.persist(); err != nil {
		r.w.log.Error("keep task status in agent db", "task_id", r.id, "err", err)
	}
	if !removing {
		r.w.statuses.Enqueue(r.id, st)
	}
}

// amend makes message the message of the replica's current status, when
// it is STARTING or RUNNING (a notify check's STATUS= text), and queues
// it for the dispatcher. It is not written to the db: a replica may say
// its status often, and after an agent restart it says it again.
func (r *taskRunner) amend(message string) {
	r.mu.Lock()
	cur := r.status
	switch {
	case r.removing, cur.GetMessage() == message,
		cur.GetState() != api.TaskState_TASK_STATE_STARTING && cur.GetState() != api.TaskState_TASK_STATE_RUNNING:
		r.mu.Unlock()
		return
	}
	st := proto.CloneOf(cur)
	st.Message = message
	st.Timestamp = timestamppb.New(time.Now())
	r.status = st
	r.mu.Unlock()
	r.w.statuses.Enqueue(r.id, st)
}

func newStatus(state api.TaskState, message string) *api.TaskStatus {
	return &api.TaskStatus{State: state, Message: message}
}

func failed(reason, format string, args ...any) *api.TaskStatus {
	return &api.TaskStatus{State: api.TaskState_TASK_STATE_FAILED, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func terminal(s api.TaskState) bool { return s >= api.TaskState_TASK_STATE_COMPLETE }

// rejection is a replica this node cannot run at all.
type rejection struct{ reason, message string }

func (e *rejection) Error() string { return e.message }

// runtimeFor names the runtime that runs spec's replicas.
func runtimeFor(spec *api.ServiceSpec) (string, error) {
	switch {
	case spec.GetImage() != "" && spec.GetBundle() != nil:
		return "", &rejection{ReasonInvalidSpec, "spec has both an image and a bundle"}
	case spec.GetImage() != "":
		return exec.RuntimeContainerd, nil
	case spec.GetBundle() != nil:
		return exec.RuntimeHooks, nil
	}
	return "", &rejection{ReasonInvalidSpec, "spec has neither an image nor a bundle"}
}

// controller makes the replica's controller with the runtime its spec
// needs.
func (r *taskRunner) controller() (exec.Controller, error) {
	if err := validTaskID(r.id); err != nil {
		return nil, &rejection{ReasonInvalidSpec, err.Error()}
	}
	t := r.snapshot()
	// The runtime sees the spec with its templates expanded for this
	// replica on this node, in t, a copy; r.task keeps them as the manager
	// stored them, for the db and the reports: the manager compares specs
	// to decide updates (docs/design.md §9). The manager checked them
	// (spectemplate.Check), so this fails only where an agent differs.
	spec, err := spectemplate.Expand(t.GetSpec(), spectemplate.NewContext(t, r.w.node))
	if err != nil {
		return nil, &rejection{ReasonInvalidSpec, fmt.Sprintf("expand the spec's templates on node %s: %v", r.w.node.Hostname, err)}
	}
	if err := volumes.SlotVolumes(t, spec); err != nil {
		return nil, &rejection{ReasonInvalidSpec, err.Error()}
	}
	t.Spec = spec
	want, err := runtimeFor(spec)
	if err != nil {
		return nil, err
	}
	cfg := r.w.cfg
	for _, rt := range cfg.Runtimes {
		if rt.Name() != want {
			continue
		}
		files, err := r.w.replicaFiles(spec)
		if err != nil {
			return nil, &rejection{ReasonInvalidSpec, err.Error()}
		}
		dir := cfg.replicaDir(r.id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("make replica dir: %w", err)
		}
		return rt.Controller(exec.Replica{
			Task: t, NodeID: cfg.NodeID, NodeName: cfg.NodeName,
			Dir: dir, LogPath: LogPath(cfg.Dir, r.id), Files: files,
		})
	}
	return nil, &rejection{ReasonNoRuntime, fmt.Sprintf("node %s has no %s runtime", cfg.NodeName, want)}
}

// run is the runner's goroutine.
func (r *taskRunner) run(ctx context.Context) {
	defer r.w.wg.Done()
	r.awaitFiles(ctx)
	ctl, err := r.controller()
	if err != nil {
		var rej *rejection
		if errors.As(err, &rej) {
			r.report(&api.TaskStatus{State: api.TaskState_TASK_STATE_REJECTED, Reason: rej.reason, Message: rej.message})
		} else {
			r.report(failed(ReasonPrepareFailed, "%v", err))
		}
	}
	// The runtime writes the replica's output to its raw log from
	// prepare on; the collector keeps it, timestamped, past the replica.
	var col *logs.Collector
	if ctl != nil {
		col = r.w.logs.Collect(ctx, r.id)
		defer col.Wait()
	}
	if !terminal(r.state()) {
		r.runToEnd(ctx, ctl)
	}
	select {
	case <-ctx.Done():
		return
	case <-r.removed:
	}
	r.cleanup(ctx, ctl, col)
}
