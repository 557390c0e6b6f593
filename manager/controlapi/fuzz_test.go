package controlapi

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
)

// FuzzCreateServiceSpec: a service spec as a client sends it (decoded from
// the wire) is created as sent, or refused with a stable reason word and
// nothing stored; never a panic.
func FuzzCreateServiceSpec(f *testing.F) {
	for _, spec := range []*api.ServiceSpec{
		imageSpec("web"),
		imageSpec("api", "db"),
		{Name: "hooks", Bundle: &api.HookBundle{Files: map[string][]byte{api.HookLaunch: []byte("#!/bin/sh\nexec sleep 1\n")}}},
		{Name: "g", Image: "busybox", Mode: api.ServiceMode_SERVICE_MODE_GLOBAL, Env: []string{"A=1"},
			Ports:  []*api.PortConfig{{TargetPort: 80, PublishedPort: 8080}},
			Health: &api.HealthCheck{Interval: durationpb.New(1e9), Retries: 3}},
		{Name: "Bad Name", Image: "busybox", Replicas: 1 << 40},
	} {
		b, err := proto.Marshal(spec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var spec api.ServiceSpec
		if err := proto.Unmarshal(data, &spec); err != nil {
			return
		}
		s, st := newServiceServer(t)
		resp, err := s.CreateService(context.Background(), &api.CreateServiceRequest{Spec: &spec})
		var stored []*api.Service
		st.View(func(tx store.ReadTx) { stored = tx.ListServices() })
		if err != nil {
			if reason.Of(err) == "" {
				t.Fatalf("refusal %v carries no reason word", err)
			}
			if len(stored) != 0 {
				t.Fatalf("a refused spec stored %d services", len(stored))
			}
			return
		}
		if len(stored) != 1 || !proto.Equal(stored[0].GetSpec(), &spec) || !proto.Equal(resp.GetService().GetSpec(), &spec) {
			t.Fatalf("the created service does not hold the spec sent: %v", stored)
		}
	})
}
