package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
)

// A node running replicas of large specs answers its replica list in
// pages, each under gRPC's message limit, together the whole list.
func TestLocalReplicasPaged(t *testing.T) {
	spec := &api.ServiceSpec{Name: "web", Env: []string{"PAD=" + strings.Repeat("x", 100<<10)}}
	var replicas []*api.Task
	var want []string
	for i := range 60 {
		id := fmt.Sprintf("t%02d", (i*7)%60)
		replicas = append(replicas, &api.Task{Id: id, ServiceName: "web", Slot: uint64(i + 1), Spec: spec})
		want = append(want, id)
	}
	slices.Sort(want)
	pages := 0
	got, err := paging.Collect(func(tok string) ([]*api.Task, string, error) {
		pages++
		resp, err := localReplicasPage(slices.Clone(replicas), &api.ListLocalReplicasRequest{PageToken: tok})
		return resp.GetReplicas(), resp.GetNextPageToken(), err
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.Id)
	}
	if !slices.Equal(ids, want) || pages < 6 {
		t.Fatalf("%d pages of %v, want %v in pages of 1 MiB", pages, ids, want)
	}
}
