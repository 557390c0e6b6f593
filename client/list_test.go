package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/api/reason"
)

// pagedControl answers ListServices and ListTasks from fixed pages, keyed
// by the token asked for, and records the requests.
type pagedControl struct {
	api.ControlServiceClient
	services map[string]*api.ListServicesResponse
	tasks    map[string]*api.ListTasksResponse
	asked    []string
}

func (p *pagedControl) ListServices(_ context.Context, req *api.ListServicesRequest, _ ...grpc.CallOption) (*api.ListServicesResponse, error) {
	p.asked = append(p.asked, req.PageToken)
	if resp, ok := p.services[req.PageToken]; ok {
		return resp, nil
	}
	return nil, reason.Error(codes.InvalidArgument, reason.InvalidPageToken, "no page %q", req.PageToken)
}

func (p *pagedControl) ListTasks(_ context.Context, req *api.ListTasksRequest, _ ...grpc.CallOption) (*api.ListTasksResponse, error) {
	p.asked = append(p.asked, fmt.Sprintf("%s/%s/%d/%s", req.Service, req.Node, req.PageSize, req.PageToken))
	return p.tasks[req.PageToken], nil
}

func svc(id, name string) *api.Service {
	return &api.Service{Id: id, Spec: &api.ServiceSpec{Name: name}}
}

func names(svcs []*api.Service) []string {
	var out []string
	for _, s := range svcs {
		out = append(out, s.Spec.Name)
	}
	return out
}

func TestListServicesGathersEveryPageSortedByName(t *testing.T) {
	ctl := &pagedControl{services: map[string]*api.ListServicesResponse{
		"":   {Services: []*api.Service{svc("1", "web"), svc("2", "db")}, NextPageToken: "p2"},
		"p2": {Services: []*api.Service{svc("3", "cache")}, NextPageToken: "p3"},
		"p3": {Services: []*api.Service{svc("4", "api")}},
	}}
	c := &Client{Control: ctl}
	got, err := c.ListServices(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"api", "cache", "db", "web"}; !slices.Equal(names(got), want) {
		t.Errorf("services %v, want %v", names(got), want)
	}
	if want := []string{"", "p2", "p3"}; !slices.Equal(ctl.asked, want) {
		t.Errorf("asked for pages %q, want %q", ctl.asked, want)
	}
}

func TestListTasksKeepsTheFiltersOnEveryPage(t *testing.T) {
	ctl := &pagedControl{tasks: map[string]*api.ListTasksResponse{
		"":   {Tasks: []*api.Task{{Id: "b", ServiceName: "web", Slot: 2}}, NextPageToken: "p2"},
		"p2": {Tasks: []*api.Task{{Id: "a", ServiceName: "web", Slot: 1}}},
	}}
	c := &Client{Control: ctl}
	got, err := c.ListTasks(context.Background(), &api.ListTasksRequest{Service: "web", Node: "w1", PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Slot != 1 || got[1].Slot != 2 {
		t.Errorf("tasks %v, want slots 1 and 2 in order", got)
	}
	if want := []string{"web/w1/1/", "web/w1/1/p2"}; !slices.Equal(ctl.asked, want) {
		t.Errorf("asked %q, want %q", ctl.asked, want)
	}
}

// A server whose tokens go in circles must not keep the CLI asking
// forever: the listing fails, saying so.
func TestListServicesStopsOnATokenThatDoesNotAdvance(t *testing.T) {
	for name, pages := range map[string]map[string]*api.ListServicesResponse{
		"same token": {
			"":   {Services: []*api.Service{svc("1", "a")}, NextPageToken: "p2"},
			"p2": {Services: []*api.Service{svc("2", "b")}, NextPageToken: "p2"},
		},
		"a cycle": {
			"":   {Services: []*api.Service{svc("1", "a")}, NextPageToken: "p2"},
			"p2": {Services: []*api.Service{svc("2", "b")}, NextPageToken: "p3"},
			"p3": {Services: []*api.Service{svc("3", "c")}, NextPageToken: "p2"},
		},
		"an empty page with a token": {
			"":   {Services: []*api.Service{svc("1", "a")}, NextPageToken: "p2"},
			"p2": {NextPageToken: "p3"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			ctl := &pagedControl{services: pages}
			_, err := (&Client{Control: ctl}).ListServices(context.Background(), nil)
			if !errors.Is(err, paging.ErrStuck) {
				t.Fatalf("ListServices = %v, want ErrStuck", err)
			}
			if len(ctl.asked) > 4 {
				t.Fatalf("asked %d pages", len(ctl.asked))
			}
		})
	}
}

func TestListServicesKeepsTheServersReason(t *testing.T) {
	ctl := &pagedControl{services: map[string]*api.ListServicesResponse{
		"": {Services: []*api.Service{svc("1", "a")}, NextPageToken: "gone"},
	}}
	_, err := (&Client{Control: ctl}).ListServices(context.Background(), nil)
	if reason.Of(err) != reason.InvalidPageToken {
		t.Fatalf("ListServices = %v, want the server's invalid_page_token", err)
	}
}
