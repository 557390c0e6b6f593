package controlapi

import (
	"context"
	"slices"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func TestRebalanceServiceAsksTheOrchestrator(t *testing.T) {
	s, st := newServiceServer(t)
	ctx := context.Background()
	create(t, s, imageSpec("web"))
	create(t, s, imageSpec("db"))
	g := imageSpec("agent")
	g.Mode = api.ServiceMode_SERVICE_MODE_GLOBAL
	g.Replicas = 0
	create(t, s, g)
	setState(t, st, "db", api.UpdateState_UPDATE_STATE_PAUSED)

	resp, err := s.RebalanceService(ctx, &api.RebalanceServiceRequest{Service: "web"})
	if err != nil || len(resp.Services) != 1 ||
		resp.Services[0].GetRebalance().GetState() != api.RebalanceState_REBALANCE_STATE_REQUESTED {
		t.Fatalf("rebalance web = %v, %v; want it requested", resp, err)
	}
	for _, tc := range []struct {
		req  *api.RebalanceServiceRequest
		word string
	}{
		{&api.RebalanceServiceRequest{}, reason.InvalidSpec},
		{&api.RebalanceServiceRequest{Service: "web", All: true}, reason.InvalidSpec},
		{&api.RebalanceServiceRequest{Service: "nope"}, reason.NotFound},
		{&api.RebalanceServiceRequest{Service: "agent"}, reason.InvalidSpec},
		{&api.RebalanceServiceRequest{Service: "db"}, reason.UpdateInProgress},
	} {
		before := services(st)
		_, err := s.RebalanceService(ctx, tc.req)
		wantReason(t, err, tc.word)
		if after := services(st); !slices.EqualFunc(before, after, func(a, b *api.Service) bool {
			return a.GetMeta().GetVersion() == b.GetMeta().GetVersion()
		}) {
			t.Fatalf("refused %v changed a service", tc.req)
		}
	}
	all, err := s.RebalanceService(ctx, &api.RebalanceServiceRequest{All: true})
	if err != nil || len(all.Services) != 1 || all.Services[0].GetSpec().GetName() != "web" ||
		len(all.Skipped) != 1 {
		t.Fatalf("rebalance --all = %v, %v; want web asked, db skipped (paused), agent left out (global)", all, err)
	}
}

func services(st *store.Store) (out []*api.Service) {
	st.View(func(tx store.ReadTx) { out = tx.ListServices() })
	return out
}

func TestUpdateClusterRebalanceOnJoin(t *testing.T) {
	s, st := newServiceServer(t)
	storetest.Create(t, st, &api.Cluster{Id: "c1", Meta: &api.Meta{}})
	on := true
	resp, err := s.UpdateCluster(context.Background(), &api.UpdateClusterRequest{RebalanceOnJoin: &on})
	if err != nil || !resp.RebalanceOnJoin {
		t.Fatalf("rebalance_on_join on: %v, %v", resp, err)
	}
	var c *api.Cluster
	st.View(func(tx store.ReadTx) { c = tx.Cluster() })
	if !c.GetRebalanceOnJoin() {
		t.Fatal("rebalance_on_join not stored")
	}
}
