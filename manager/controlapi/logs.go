package controlapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// NodeDialer opens a connection to another node's advertise address with
// this manager's node certificate.
type NodeDialer func(ctx context.Context, addr string) (*grpc.ClientConn, error)

// WithNodeDialer lets the server fetch replica logs from the nodes.
func WithNodeDialer(d NodeDialer) Option { return func(s *Server) { s.dial = d } }

// ServiceLogs merges the logs of a service's replicas, asking each node
// that ran one for its part. Replicas placed after the call starts are
// not followed (run the command again). A node that cannot answer (it is
// down, say) costs its part only: a line in the stream says so, and the
// call fails only when no node answered.
func (s *Server) ServiceLogs(req *api.ServiceLogsRequest, stream grpc.ServerStreamingServer[api.LogsMessage]) error {
	if s.dial == nil {
		return reason.Error(codes.Unimplemented, reason.NotAManager, "this server cannot reach nodes for logs")
	}
	byAddr, names, err := s.replicasByNode(req.Service)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	var (
		sendMu sync.Mutex
		wg     sync.WaitGroup
		errs   = make([]error, 0, len(byAddr))
	)
	send := func(m *api.LogsMessage) error {
		for _, l := range m.Lines {
			if n, ok := names[l.TaskId]; ok {
				l.ServiceName, l.Slot, l.NodeName = n.service, n.slot, n.node
			}
		}
		sendMu.Lock()
		defer sendMu.Unlock()
		return stream.Send(m)
	}
	for addr, ids := range byAddr {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.nodeLogs(ctx, addr, &api.LogsRequest{TaskIds: ids, Follow: req.Follow, Tail: req.Tail, Since: req.Since}, send)
			if err == nil || ctx.Err() != nil {
				return
			}
			err = fmt.Errorf("logs from %s: %w", addr, err)
			_ = send(&api.LogsMessage{Lines: []*api.LogLine{{Stream: "stderr", Data: []byte("jaco: " + err.Error())}}})
			sendMu.Lock()
			errs = append(errs, err)
			sendMu.Unlock()
		}()
	}
	wg.Wait()
	if len(byAddr) > 0 && len(errs) == len(byAddr) {
		return reason.Error(codes.Unavailable, reason.Unavailable, "%v", errors.Join(errs...))
	}
	return nil
}

// replicaName is what the CLI prints a replica's lines under,
// NAME.SLOT@NODE, taken from the store so the nodes need not know it.
type replicaName struct {
	service string
	slot    uint64
	node    string
}

// replicasByNode groups the ids of a service's replicas that were placed
// by the address of their node, ended ones included: their node keeps
// their logs as long as the orchestrator keeps them in the store
// (docs/design.md §9), which is how logs show why a replica crashed.
func (s *Server) replicasByNode(service string) (map[string][]string, map[string]replicaName, error) {
	byAddr := map[string][]string{}
	names := map[string]replicaName{}
	var err error
	s.store.View(func(tx store.ReadTx) {
		svc := findService(tx, service)
		if svc == nil {
			err = notFound("service", service)
			return
		}
		for _, t := range tx.ListTasksByService(svc.Id) {
			n := tx.GetNode(t.NodeId)
			if n == nil || n.Address == "" {
				continue
			}
			byAddr[n.Address] = append(byAddr[n.Address], t.Id)
			names[t.Id] = replicaName{service: svc.GetSpec().GetName(), slot: t.Slot, node: n.Hostname}
		}
	})
	return byAddr, names, err
}

func (s *Server) nodeLogs(ctx context.Context, addr string, req *api.LogsRequest, send func(*api.LogsMessage) error) error {
	conn, err := s.dial(ctx, addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	logs, err := api.NewAgentServiceClient(conn).Logs(ctx, req)
	if err != nil {
		return err
	}
	for {
		m, err := logs.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := send(m); err != nil {
			return err
		}
	}
}
