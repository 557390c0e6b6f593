package controlapi

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/state/store"
	"github.com/jaco-project/jaco/manager/state/store/storetest"
)

func newStackServer(t *testing.T) (*Server, *store.Store, *storetest.Proposer) {
	t.Helper()
	st, p := storetest.NewWithProposer(t)
	storetest.Create(t, st, &api.Cluster{Id: "c1", Meta: &api.Meta{}}, &api.Node{Id: "n1", Hostname: "w1"})
	return New(st), st, p
}

// stackSpec is a service of stack shop.
func stackSpec(name string, deps ...string) *api.ServiceSpec {
	spec := imageSpec("shop_"+name, deps...)
	spec.Labels = map[string]string{api.StackLabel: "shop"}
	spec.Networks = []string{"shop_back"}
	return spec
}

// shopStack is a stack of every kind of object: two networks, a secret,
// a config, a declared volume and one a mount creates, and three services
// (db, api depending on it, web depending on api, publishing 8080).
func shopStack() *api.DeployStackRequest {
	labels := map[string]string{api.StackLabel: "shop"}
	db := stackSpec("db")
	db.Mounts = []*api.Mount{
		{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "shop_data", Target: "/data"},
		{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "shop_cache", Target: "/cache"},
	}
	apiSpec := stackSpec("api", "shop_db")
	apiSpec.Secrets = []*api.FileReference{{Name: "shop_pw"}}
	apiSpec.Configs = []*api.FileReference{{Name: "shop_site", Target: "/etc/site.conf"}}
	web := stackSpec("web", "shop_api")
	web.Networks = append(web.Networks, "shop_front")
	web.Ports = []*api.PortConfig{{TargetPort: 80, PublishedPort: 8080}}
	return &api.DeployStackRequest{
		Stack:    "shop",
		Networks: []*api.NetworkSpec{{Name: "shop_back", Labels: labels}, {Name: "shop_front", Labels: labels}},
		Secrets:  []*api.FileSpec{{Name: "shop_pw", Data: []byte("pw"), Labels: labels}},
		Configs:  []*api.FileSpec{{Name: "shop_site", Data: []byte("listen 80"), Labels: labels}},
		Volumes:  []*api.VolumeSpec{{Name: "shop_data", Labels: labels}},
		Services: []*api.StackService{{Spec: db}, {Spec: apiSpec}, {Spec: web}},
	}
}

// snapshot names every network, secret, config, volume and service with
// its version: two equal snapshots are the same state.
func snapshot(st *store.Store) string {
	var out []string
	st.View(func(tx store.ReadTx) {
		for _, n := range tx.ListNetworks() {
			out = append(out, fmt.Sprintf("network %s@%d", n.Spec.Name, n.Meta.GetVersion()))
		}
		for _, s := range tx.ListSecrets() {
			out = append(out, fmt.Sprintf("secret %s@%d", s.Spec.Name, s.Meta.GetVersion()))
		}
		for _, c := range tx.ListConfigs() {
			out = append(out, fmt.Sprintf("config %s@%d", c.Spec.Name, c.Meta.GetVersion()))
		}
		tx.ScanVolumes("", func(v *api.Volume) bool {
			out = append(out, fmt.Sprintf("volume %s@%d", v.Spec.Name, v.Meta.GetVersion()))
			return true
		})
		for _, s := range tx.ListServices() {
			out = append(out, fmt.Sprintf("service %s@%d", s.Spec.Name, s.Meta.GetVersion()))
		}
	})
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// A stack whose third service the server refuses creates nothing: not
// the networks, secrets, configs and volumes before it, not the two
// services before it. Each refusal is one a separate CreateService of the
// third service would meet only in the store, or in its spec alone.
func TestDeployStackRefusedCreatesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, s *Server, st *store.Store)
		third func(spec *api.ServiceSpec)
		word  string
		says  string
	}{
		{"port another service publishes", func(t *testing.T, s *Server, _ *store.Store) {
			other := imageSpec("other")
			other.Ports = []*api.PortConfig{{TargetPort: 80, PublishedPort: 8080}}
			create(t, s, other)
		}, nil, reason.InvalidSpec, "8080"},
		{"unknown pinned node", nil, func(spec *api.ServiceSpec) {
			spec.Placement = &api.Placement{PinNode: "ghost"}
		}, reason.InvalidSpec, "ghost"},
		{"placement constraint refused", nil, func(spec *api.ServiceSpec) {
			spec.Placement = &api.Placement{Constraints: []string{"node.role==boss"}}
		}, reason.InvalidSpec, "node.role"},
		{"max_services reached", func(t *testing.T, _ *Server, st *store.Store) {
			var c *api.Cluster
			st.View(func(tx store.ReadTx) { c = tx.Cluster() })
			c.MaxServices = 2
			if err := st.Update(context.Background(), func(tx *store.Tx) error { return tx.Update(c) }); err != nil {
				t.Fatal(err)
			}
		}, nil, reason.LimitExceeded, "max_services"},
		{"network missing", nil, func(spec *api.ServiceSpec) {
			spec.Networks = append(spec.Networks, "shop_nowhere")
		}, reason.NotFound, "shop_nowhere"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, st, p := newStackServer(t)
			if tc.setup != nil {
				tc.setup(t, s, st)
			}
			req := shopStack()
			if tc.third != nil {
				tc.third(req.Services[2].Spec)
			}
			before, proposals := snapshot(st), p.Proposals()
			_, err := s.DeployStack(context.Background(), req)
			wantRefused(t, "deploy", err, tc.word, tc.says)
			if after := snapshot(st); after != before {
				t.Fatalf("a refused deploy changed the store:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if n := p.Proposals() - proposals; n != 0 {
				t.Fatalf("a refused deploy proposed %d writes, want none", n)
			}
		})
	}
}

// A valid stack is one write holding every object, the services naming
// the secret, config and volumes that write created.
func TestDeployStackCreatesEverythingInOneWrite(t *testing.T) {
	s, st, p := newStackServer(t)
	proposals := p.Proposals()
	resp, err := s.DeployStack(context.Background(), shopStack())
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Proposals() - proposals; n != 1 {
		t.Fatalf("the deploy proposed %d writes, want 1", n)
	}
	want := strings.Join([]string{
		"config shop_site", "network ingress", "network shop_back", "network shop_front", "secret shop_pw",
		"service shop_api", "service shop_db", "service shop_web", "volume shop_cache", "volume shop_data",
	}, "\n")
	got := snapshot(st)
	var names []string
	for _, line := range strings.Split(got, "\n") {
		name, _, _ := strings.Cut(line, "@")
		names = append(names, name)
	}
	if strings.Join(names, "\n") != want {
		t.Fatalf("the store holds\n%s\nwant\n%s", got, want)
	}
	// One write: every object carries the same version.
	versions := map[string]bool{}
	for _, line := range strings.Split(got, "\n") {
		_, v, _ := strings.Cut(line, "@")
		versions[v] = true
	}
	if len(versions) != 1 {
		t.Fatalf("objects carry versions %v, want one write's", versions)
	}
	if !slices.Equal(resp.CreatedNetworks, []string{"shop_back", "shop_front"}) || !slices.Equal(resp.CreatedSecrets, []string{"shop_pw"}) ||
		!slices.Equal(resp.CreatedConfigs, []string{"shop_site"}) || !slices.Equal(resp.CreatedVolumes, []string{"shop_data", "shop_cache"}) ||
		len(resp.Created) != 3 || len(resp.Updated) != 0 || len(resp.Removed) != 0 {
		t.Fatalf("response %v", resp)
	}
	for i, name := range []string{"shop_db", "shop_api", "shop_web"} {
		if resp.Created[i].GetSpec().GetName() != name || resp.Created[i].GetId() == "" {
			t.Fatalf("created[%d] is %v, want %s as stored", i, resp.Created[i], name)
		}
	}
	apiSvc := getSvc(t, st, "shop_api")
	if apiSvc.Spec.Secrets[0].Id == "" || apiSvc.Spec.Configs[0].Id == "" {
		t.Fatalf("shop_api's references carry no ids: %v %v", apiSvc.Spec.Secrets, apiSvc.Spec.Configs)
	}
	if db := getSvc(t, st, "shop_db"); db.Spec.Mounts[0].VolumeId == "" || db.Spec.Mounts[1].VolumeId == "" {
		t.Fatalf("shop_db's volume mounts carry no ids: %v", db.Spec.Mounts)
	}
}

// A redeploy updates a changed service, adds one and prunes one in one
// write, leaving the networks, secrets and configs that exist as they
// are; one based on a stale version changes nothing.
func TestDeployStackRedeploy(t *testing.T) {
	s, st, p := newStackServer(t)
	ctx := context.Background()
	first := shopStack()
	old := stackSpec("old")
	first.Services = append(first.Services, &api.StackService{Spec: old})
	if _, err := s.DeployStack(ctx, first); err != nil {
		t.Fatal(err)
	}
	web := getSvc(t, st, "shop_web")
	next := shopStack()
	next.Services[2].Spec.Image = "jaco.local/busybox:next"
	next.Services[2].Version = web.Meta.GetVersion()
	next.Services = append(next.Services[2:], &api.StackService{Spec: stackSpec("worker", "shop_db")})
	next.Remove = []*api.StackRemoval{{Service: getSvc(t, st, "shop_old").Id, Version: getSvc(t, st, "shop_old").Meta.GetVersion()}}

	// A dependency cycle through a service outside the stack, met by the
	// update after a create: neither is written.
	create(t, s, imageSpec("ext", "shop_db"))
	cyclic := stackSpec("db", "ext")
	cyclic.Mounts = getSvc(t, st, "shop_db").Spec.Mounts
	before := snapshot(st)
	_, err := s.DeployStack(ctx, &api.DeployStackRequest{Stack: "shop", Services: []*api.StackService{
		{Spec: stackSpec("worker")}, {Spec: cyclic, Version: getSvc(t, st, "shop_db").Meta.GetVersion()},
	}})
	wantRefused(t, "cyclic redeploy", err, reason.InvalidSpec, "dependency cycle")
	if after := snapshot(st); after != before {
		t.Fatalf("a cyclic redeploy changed the store:\n%s\nwant\n%s", after, before)
	}

	stale := shopStack()
	stale.Services = []*api.StackService{{Spec: stackSpec("worker", "shop_db")}, {Spec: next.Services[0].Spec, Version: web.Meta.GetVersion() - 1}}
	_, err = s.DeployStack(ctx, stale)
	wantRefused(t, "stale redeploy", err, reason.VersionConflict)
	if after := snapshot(st); after != before {
		t.Fatalf("a stale redeploy changed the store:\n%s\nwant\n%s", after, before)
	}

	proposals := p.Proposals()
	resp, err := s.DeployStack(ctx, next)
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Proposals() - proposals; n != 1 {
		t.Fatalf("the redeploy proposed %d writes, want 1", n)
	}
	if len(resp.CreatedNetworks)+len(resp.CreatedSecrets)+len(resp.CreatedConfigs)+len(resp.CreatedVolumes) != 0 {
		t.Fatalf("the redeploy created %v again", resp)
	}
	if len(resp.Updated) != 1 || resp.Updated[0].Spec.Image != "jaco.local/busybox:next" || resp.Updated[0].SpecVersion != 2 ||
		resp.Updated[0].UpdateStatus.GetState() != api.UpdateState_UPDATE_STATE_UPDATING {
		t.Fatalf("updated %v, want shop_web at spec version 2, updating", resp.Updated)
	}
	if len(resp.Created) != 1 || resp.Created[0].Spec.Name != "shop_worker" || !slices.Equal(resp.Removed, []string{"shop_old"}) {
		t.Fatalf("created %v removed %v, want shop_worker and shop_old", resp.Created, resp.Removed)
	}
	st.View(func(tx store.ReadTx) {
		if tx.FindServiceByName("shop_old") != nil {
			t.Error("shop_old was not removed")
		}
	})
}

// A deploy neither updates nor removes a service that is not the stack's.
func TestDeployStackTakesNothingOver(t *testing.T) {
	s, st, _ := newStackServer(t)
	ctx := context.Background()
	mine := create(t, s, imageSpec("shop_web"))
	stranger := create(t, s, imageSpec("stranger"))
	before := snapshot(st)
	spec := stackSpec("web")
	spec.Networks = nil
	_, err := s.DeployStack(ctx, &api.DeployStackRequest{Stack: "shop", Services: []*api.StackService{{Spec: spec, Version: mine.Meta.GetVersion()}}})
	wantRefused(t, "update of an unlabelled service", err, reason.InvalidSpec, "not part of stack shop")
	_, err = s.DeployStack(ctx, &api.DeployStackRequest{Stack: "shop", Remove: []*api.StackRemoval{{Service: stranger.Id}}})
	wantRefused(t, "removal of an unlabelled service", err, reason.InvalidSpec, "not part of stack shop")
	_, err = s.DeployStack(ctx, &api.DeployStackRequest{Stack: "shop", Services: []*api.StackService{{Spec: imageSpec("shop_db")}}})
	wantRefused(t, "a service without the stack's label", err, reason.InvalidSpec, api.StackLabel)
	if after := snapshot(st); after != before {
		t.Fatalf("refused deploys changed the store:\n%s\nwant\n%s", after, before)
	}
}
