package client

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
)

// The servers list in pages, in id order (docs/adr/0019-list-paging.md);
// these gather every page and sort the result for people to read. Each
// page is asked for with a copy of req (nil: an empty one) carrying that
// page's token, so filters and other fields hold for every page.

// ListNodes returns every node, sorted by hostname.
func (c *Client) ListNodes(ctx context.Context, req *api.ListNodesRequest) ([]*api.Node, error) {
	nodes, _, err := c.ListNodesCounted(ctx, req)
	return nodes, err
}

// ListNodesCounted is ListNodes with each node's replicas as the manager
// counted them, by node id.
func (c *Client) ListNodesCounted(ctx context.Context, req *api.ListNodesRequest) ([]*api.Node, map[string]*api.ReplicaCount, error) {
	counts := map[string]*api.ReplicaCount{}
	nodes, err := paging.Collect(func(tok string) ([]*api.Node, string, error) {
		r := cloneOr(req, &api.ListNodesRequest{})
		r.PageToken = tok
		resp, err := c.Control.ListNodes(ctx, r)
		countByID(counts, resp.GetNodes(), resp.GetCounts())
		return resp.GetNodes(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(nodes, func(a, b *api.Node) int {
		return cmp.Or(strings.Compare(a.Hostname, b.Hostname), strings.Compare(a.Id, b.Id))
	})
	return nodes, counts, nil
}

// ListServices returns every service, sorted by name.
func (c *Client) ListServices(ctx context.Context, req *api.ListServicesRequest) ([]*api.Service, error) {
	svcs, _, err := c.ListServicesCounted(ctx, req)
	return svcs, err
}

// ListServicesCounted is ListServices with each service's replicas as the
// manager counted them, by service id.
func (c *Client) ListServicesCounted(ctx context.Context, req *api.ListServicesRequest) ([]*api.Service, map[string]*api.ReplicaCount, error) {
	counts := map[string]*api.ReplicaCount{}
	svcs, err := paging.Collect(func(tok string) ([]*api.Service, string, error) {
		r := cloneOr(req, &api.ListServicesRequest{})
		r.PageToken = tok
		resp, err := c.Control.ListServices(ctx, r)
		countByID(counts, resp.GetServices(), resp.GetCounts())
		return resp.GetServices(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(svcs, func(a, b *api.Service) int {
		return cmp.Or(strings.Compare(a.GetSpec().GetName(), b.GetSpec().GetName()), strings.Compare(a.Id, b.Id))
	})
	return svcs, counts, nil
}

// countByID files a page's counts, which come in the order of its items,
// under the items' ids.
func countByID[T interface{ GetId() string }](into map[string]*api.ReplicaCount, items []T, counts []*api.ReplicaCount) {
	for i, c := range counts[:min(len(counts), len(items))] {
		into[items[i].GetId()] = c
	}
}

// ListTasks returns the replicas req narrows to (service, node), ordered
// by service, slot, node and creation.
func (c *Client) ListTasks(ctx context.Context, req *api.ListTasksRequest) ([]*api.Task, error) {
	tasks, err := paging.Collect(func(tok string) ([]*api.Task, string, error) {
		r := cloneOr(req, &api.ListTasksRequest{})
		r.PageToken = tok
		resp, err := c.Control.ListTasks(ctx, r)
		return resp.GetTasks(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(tasks, compareTasks)
	return tasks, nil
}

// ListLocalReplicas returns the replicas the daemon's own agent runs or
// still has to stop, ordered as ListTasks orders.
func (c *Client) ListLocalReplicas(ctx context.Context, req *api.ListLocalReplicasRequest) ([]*api.Task, error) {
	tasks, err := paging.Collect(func(tok string) ([]*api.Task, string, error) {
		r := cloneOr(req, &api.ListLocalReplicasRequest{})
		r.PageToken = tok
		resp, err := c.Agent.ListLocalReplicas(ctx, r)
		return resp.GetReplicas(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(tasks, compareTasks)
	return tasks, nil
}

// cloneOr returns a copy of req, or empty when req is nil.
func cloneOr[T proto.Message](req, empty T) T {
	if !req.ProtoReflect().IsValid() { // a nil message
		return empty
	}
	return proto.CloneOf(req)
}

func compareTasks(a, b *api.Task) int {
	return cmp.Or(
		strings.Compare(a.ServiceName, b.ServiceName),
		cmp.Compare(a.Slot, b.Slot),
		strings.Compare(a.NodeId, b.NodeId),
		a.GetMeta().GetCreatedAt().AsTime().Compare(b.GetMeta().GetCreatedAt().AsTime()),
		strings.Compare(a.Id, b.Id),
	)
}
