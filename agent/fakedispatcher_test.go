package agent

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// fakeDispatcher is a DispatcherService on a loopback port: it opens
// sessions, refuses calls with a stale session id, keeps the task set it
// was given (sent whole to each new Assignments stream, then as changes)
// and records every status update in order.
type fakeDispatcher struct {
	api.UnimplementedDispatcherServiceServer
	t    *testing.T
	addr string

	mu         sync.Mutex
	srv        *grpc.Server
	session    string
	sessions   int
	heartbeats int
	tasks      map[string]*api.Task
	streams    map[chan *api.AssignmentsMessage]bool
	updates    map[string][]*api.TaskStatus
	kill       chan struct{} // closed to end the current session stream
	desc       *api.NodeDescription
	// secrets and configs go with every COMPLETE set (assignFiles).
	secrets []*api.Secret
	configs []*api.Config
}

func newFakeDispatcher(t *testing.T) *fakeDispatcher {
	d := &fakeDispatcher{t: t, tasks: map[string]*api.Task{}, streams: map[chan *api.AssignmentsMessage]bool{}, updates: map[string][]*api.TaskStatus{}}
	d.start("127.0.0.1:0")
	t.Cleanup(d.stop)
	return d
}

// start serves on addr (the same port again after stop).
func (d *fakeDispatcher) start(addr string) {
	d.t.Helper()
	var l net.Listener
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; {
		if l, err = net.Listen("tcp", addr); err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		d.t.Fatalf("listen %s: %v", addr, err)
	}
	srv := grpc.NewServer()
	api.RegisterDispatcherServiceServer(srv, d)
	d.mu.Lock()
	d.srv, d.addr = srv, l.Addr().String()
	d.kill = make(chan struct{})
	d.mu.Unlock()
	go func() { _ = srv.Serve(l) }()
}

// stop ends every call and closes the port (the dispatcher is gone).
func (d *fakeDispatcher) stop() {
	d.mu.Lock()
	srv := d.srv
	d.srv = nil
	d.mu.Unlock()
	if srv != nil {
		srv.Stop()
	}
}

func dialInsecure(_ context.Context, addr string) (*grpc.ClientConn, error) {
	return grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
}

// loseLeader ends the open session streams with no_leader, as a manager
// does when the leader it forwards to goes away.
func (d *fakeDispatcher) loseLeader() {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.kill)
	d.kill = make(chan struct{})
}

func (d *fakeDispatcher) description() *api.NodeDescription {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.desc
}

// expireSession makes the current session id stale without closing its
// stream (as after a leader change the old id is unknown).
func (d *fakeDispatcher) expireSession() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.session = "expired"
}

func (d *fakeDispatcher) checkSession(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if id != d.session {
		return reason.Error(codes.NotFound, reason.NotFound, "session %q is not current", id)
	}
	return nil
}

func (d *fakeDispatcher) Session(req *api.SessionRequest, stream grpc.ServerStreamingServer[api.SessionMessage]) error {
	d.mu.Lock()
	d.desc = req.GetDescription()
	d.sessions++
	d.session = fmt.Sprintf("session-%d", d.sessions)
	msg := &api.SessionMessage{SessionId: d.session, Managers: []string{d.addr}, HeartbeatPeriod: durationpb.New(50 * time.Millisecond)}
	kill := d.kill
	d.mu.Unlock()
	if err := stream.Send(msg); err != nil {
		return err
	}
	select {
	case <-stream.Context().Done():
		return nil
	case <-kill:
		return reason.Error(codes.Unavailable, reason.NoLeader, "leader lost")
	}
}

func (d *fakeDispatcher) Heartbeat(_ context.Context, req *api.HeartbeatRequest) (*api.HeartbeatResponse, error) {
	if err := d.checkSession(req.GetSessionId()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.heartbeats++
	d.mu.Unlock()
	return &api.HeartbeatResponse{Period: durationpb.New(50 * time.Millisecond)}, nil
}

func (d *fakeDispatcher) Assignments(req *api.AssignmentsRequest, stream grpc.ServerStreamingServer[api.AssignmentsMessage]) error {
	if err := d.checkSession(req.GetSessionId()); err != nil {
		return err
	}
	ch := make(chan *api.AssignmentsMessage, 64)
	d.mu.Lock()
	complete := &api.AssignmentsMessage{Type: api.AssignmentsMessage_TYPE_COMPLETE, Secrets: d.secrets, Configs: d.configs}
	for _, t := range d.tasks {
		complete.Updated = append(complete.Updated, proto.CloneOf(t))
	}
	d.streams[ch] = true
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.streams, ch)
		d.mu.Unlock()
	}()
	if err := stream.Send(complete); err != nil {
		return err
	}
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case m := <-ch:
			if err := stream.Send(m); err != nil {
				return err
			}
		}
	}
}

func (d *fakeDispatcher) UpdateTaskStatus(_ context.Context, req *api.UpdateTaskStatusRequest) (*api.UpdateTaskStatusResponse, error) {
	if err := d.checkSession(req.GetSessionId()); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, u := range req.GetUpdates() {
		d.updates[u.GetTaskId()] = append(d.updates[u.GetTaskId()], u.GetStatus())
		if t := d.tasks[u.GetTaskId()]; t != nil {
			t.Status = u.GetStatus()
		}
	}
	return &api.UpdateTaskStatusResponse{}, nil
}

// assign adds or changes tasks and tells the open streams.
func (d *fakeDispatcher) assign(tasks ...*api.Task) {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := &api.AssignmentsMessage{Type: api.AssignmentsMessage_TYPE_INCREMENTAL}
	for _, t := range tasks {
		t = proto.CloneOf(t)
		// As in the store: the status is what the agent last reported.
		if old := d.tasks[t.GetId()]; old != nil {
			t.Status = old.Status
		}
		d.tasks[t.GetId()] = t
		m.Updated = append(m.Updated, proto.CloneOf(t))
	}
	d.broadcastLocked(m)
}

// unassign removes tasks; complete says whether the agent learns it from a
// whole set rather than a removed list.
func (d *fakeDispatcher) unassign(complete bool, ids ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		delete(d.tasks, id)
	}
	m := &api.AssignmentsMessage{Type: api.AssignmentsMessage_TYPE_INCREMENTAL, Removed: ids}
	if complete {
		m = &api.AssignmentsMessage{Type: api.AssignmentsMessage_TYPE_COMPLETE}
		for _, t := range d.tasks {
			m.Updated = append(m.Updated, proto.CloneOf(t))
		}
	}
	d.broadcastLocked(m)
}

func (d *fakeDispatcher) broadcastLocked(m *api.AssignmentsMessage) {
	for ch := range d.streams {
		ch <- m
	}
}

// states returns the states reported for task id, in order.
func (d *fakeDispatcher) states(id string) []api.TaskState {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []api.TaskState
	for _, st := range d.updates[id] {
		out = append(out, st.GetState())
	}
	return out
}

func (d *fakeDispatcher) last(id string) *api.TaskStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	u := d.updates[id]
	if len(u) == 0 {
		return nil
	}
	return u[len(u)-1]
}

func (d *fakeDispatcher) sessionCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sessions
}

// sessionsReach holds once the dispatcher has opened n sessions in all.
func (d *fakeDispatcher) sessionsReach(n int) func() (bool, string) {
	return func() (bool, string) {
		got := d.sessionCount()
		return got >= n, fmt.Sprint("sessions: ", got)
	}
}

func (d *fakeDispatcher) heartbeatCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.heartbeats
}

func (d *fakeDispatcher) lastIs(id string, want api.TaskState) func() (bool, string) {
	return func() (bool, string) {
		states := d.states(id)
		return len(states) > 0 && states[len(states)-1] == want, fmt.Sprintf("states of %s: %v", id, states)
	}
}

func (d *fakeDispatcher) sawState(id string, want api.TaskState) bool {
	return slices.Contains(d.states(id), want)
}
