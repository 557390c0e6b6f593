package client

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
)

// The servers list in pages, in id order (docs/adr/0017-list-paging.md);
// these gather every page and sort the result for people to read.

// ListNodes returns every node, sorted by hostname.
func (c *Client) ListNodes(ctx context.Context) ([]*api.Node, error) {
	nodes, err := paging.Collect(func(tok string) ([]*api.Node, string, error) {
		resp, err := c.Control.ListNodes(ctx, &api.ListNodesRequest{PageToken: tok})
		return resp.GetNodes(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(nodes, func(a, b *api.Node) int {
		return cmp.Or(strings.Compare(a.Hostname, b.Hostname), strings.Compare(a.Id, b.Id))
	})
	return nodes, nil
}

// ListServices returns every service, sorted by name.
func (c *Client) ListServices(ctx context.Context) ([]*api.Service, error) {
	svcs, err := paging.Collect(func(tok string) ([]*api.Service, string, error) {
		resp, err := c.Control.ListServices(ctx, &api.ListServicesRequest{PageToken: tok})
		return resp.GetServices(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(svcs, func(a, b *api.Service) int {
		return cmp.Or(strings.Compare(a.GetSpec().GetName(), b.GetSpec().GetName()), strings.Compare(a.Id, b.Id))
	})
	return svcs, nil
}

// ListTasks returns the replicas of service on node (id or name; either
// may be empty for all), ordered by service, slot, node and creation.
func (c *Client) ListTasks(ctx context.Context, service, node string) ([]*api.Task, error) {
	tasks, err := paging.Collect(func(tok string) ([]*api.Task, string, error) {
		resp, err := c.Control.ListTasks(ctx, &api.ListTasksRequest{Service: service, Node: node, PageToken: tok})
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
func (c *Client) ListLocalReplicas(ctx context.Context) ([]*api.Task, error) {
	tasks, err := paging.Collect(func(tok string) ([]*api.Task, string, error) {
		resp, err := c.Agent.ListLocalReplicas(ctx, &api.ListLocalReplicasRequest{PageToken: tok})
		return resp.GetReplicas(), resp.GetNextPageToken(), err
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(tasks, compareTasks)
	return tasks, nil
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
