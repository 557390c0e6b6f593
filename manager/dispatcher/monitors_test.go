package dispatcher

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
)

func ringNode(id string, role api.NodeRole, domain string, st api.NodeStatusState) *api.Node {
	n := &api.Node{Id: id, Hostname: "host-" + id, Address: id + ":7000", Role: role,
		Status: &api.NodeStatus{State: st}}
	if domain != "" {
		n.Labels = map[string]string{FailureDomainLabel: domain}
	}
	return n
}

func monitorIDs(peers []*api.MonitorPeer) []string {
	var out []string
	for _, p := range peers {
		out = append(out, p.GetNodeId())
	}
	return out
}

func TestMonitorsAreOtherReadyWorkersInOtherDomainsFirst(t *testing.T) {
	const (
		worker  = api.NodeRole_NODE_ROLE_WORKER
		manager = api.NodeRole_NODE_ROLE_MANAGER
		ready   = api.NodeStatusState_NODE_STATUS_STATE_READY
		down    = api.NodeStatusState_NODE_STATUS_STATE_DOWN
	)
	r := newMonitorRing()
	r.reset([]*api.Node{
		ringNode("m1", manager, "a", ready),
		ringNode("w1", worker, "a", ready),
		ringNode("w2", worker, "a", ready),
		ringNode("w3", worker, "b", ready),
		ringNode("w4", worker, "b", down),
	})
	got := monitorIDs(r.pick("w1"))
	if len(got) != 2 || got[0] != "w3" || got[1] != "w2" {
		t.Fatalf("w1's monitors = %v, want w3 (worker, other domain) then w2 (worker, same domain)", got)
	}
	for _, id := range []string{"m1", "w1", "w2", "w3", "w4"} {
		for _, m := range monitorIDs(r.pick(id)) {
			if m == id || m == "w4" || m == "m1" {
				t.Fatalf("%s's monitors %v: itself, a node not ready, or a manager while workers suffice", id, monitorIDs(r.pick(id)))
			}
		}
	}
	// With one worker left, a manager fills in.
	r.set(ringNode("w2", worker, "a", down))
	r.set(ringNode("w3", worker, "b", down))
	if got := monitorIDs(r.pick("w1")); len(got) != 1 || got[0] != "m1" {
		t.Fatalf("w1's monitors = %v, want m1 alone", got)
	}
	r.remove("m1")
	if got := r.pick("w1"); len(got) != 0 {
		t.Fatalf("w1's monitors = %v, want none", monitorIDs(got))
	}
}

// lastHeardServer answers LastHeard with ago, or not heard when ago < 0.
type lastHeardServer struct {
	api.UnimplementedMonitorServiceServer
	ago time.Duration
}

func (s lastHeardServer) LastHeard(context.Context, *api.LastHeardRequest) (*api.LastHeardResponse, error) {
	if s.ago < 0 {
		return &api.LastHeardResponse{}, nil
	}
	return &api.LastHeardResponse{Heard: true, Ago: durationpb.New(s.ago)}, nil
}

func TestJudgeAsksTheMonitors(t *testing.T) {
	addr := func(s lastHeardServer) string {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		api.RegisterMonitorServiceServer(srv, s)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
		return lis.Addr().String()
	}
	recent, stale, never := addr(lastHeardServer{ago: 300 * time.Millisecond}), addr(lastHeardServer{ago: time.Minute}), addr(lastHeardServer{ago: -1})
	s := New(nil, WithHeartbeatPeriod(500*time.Millisecond), WithNodeDialer(func(a string) (*grpc.ClientConn, error) {
		return grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}))
	names := map[string]string{"a": "w2", "b": "w3", "c": "w4"}
	peer := func(id, a string) monitorAsk { return monitorAsk{&api.MonitorPeer{NodeId: id, Address: a}, names[id]} }
	v := s.judge(context.Background(), "w1", []monitorAsk{peer("b", never), peer("a", recent)})
	if v.state != api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED || !strings.Contains(v.message, "its monitor w2 heard it 300ms ago") {
		t.Fatalf("heard 300ms ago: %+v, want partitioned naming w2", v)
	}
	v = s.judge(context.Background(), "w1", []monitorAsk{peer("b", never), peer("c", stale), peer("a", "127.0.0.1:1")})
	if v.state != api.NodeStatusState_NODE_STATUS_STATE_DOWN || !strings.Contains(v.message, "(w3, w4, w2) did not hear it") {
		t.Fatalf("heard by none lately: %+v, want down naming the monitors asked", v)
	}
	if v := New(nil).judge(context.Background(), "w1", nil); v.state != api.NodeStatusState_NODE_STATUS_STATE_DOWN {
		t.Fatalf("no monitors: %+v, want down", v)
	}
}
