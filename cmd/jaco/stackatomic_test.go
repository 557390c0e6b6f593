package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/internal/compose"
)

// stackCluster is a Control API holding some of a stack already; it
// answers DeployStack with refuse when set, and records every call.
type stackCluster struct {
	api.UnimplementedControlServiceServer
	mu       sync.Mutex
	services []*api.Service
	networks []*api.Network
	refuse   error
	calls    []string
	deploys  []*api.DeployStackRequest
}

func (f *stackCluster) note(call string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call)
}

func (f *stackCluster) ListServices(context.Context, *api.ListServicesRequest) (*api.ListServicesResponse, error) {
	f.note("ListServices")
	return &api.ListServicesResponse{Services: f.services}, nil
}

func (f *stackCluster) ListNetworks(context.Context, *api.ListNetworksRequest) (*api.ListNetworksResponse, error) {
	f.note("ListNetworks")
	return &api.ListNetworksResponse{Networks: f.networks}, nil
}

func (f *stackCluster) ListSecrets(context.Context, *api.ListSecretsRequest) (*api.ListSecretsResponse, error) {
	f.note("ListSecrets")
	return &api.ListSecretsResponse{}, nil
}

func (f *stackCluster) ListConfigs(context.Context, *api.ListConfigsRequest) (*api.ListConfigsResponse, error) {
	f.note("ListConfigs")
	return &api.ListConfigsResponse{}, nil
}

func (f *stackCluster) DeployStack(_ context.Context, req *api.DeployStackRequest) (*api.DeployStackResponse, error) {
	f.note("DeployStack")
	f.mu.Lock()
	f.deploys = append(f.deploys, req)
	f.mu.Unlock()
	if f.refuse != nil {
		return nil, f.refuse
	}
	resp := &api.DeployStackResponse{Removed: []string{}}
	for _, n := range req.Networks {
		resp.CreatedNetworks = append(resp.CreatedNetworks, n.Name)
	}
	for _, s := range req.Secrets {
		resp.CreatedSecrets = append(resp.CreatedSecrets, s.Name)
	}
	for _, s := range req.Services {
		svc := &api.Service{Id: "id-" + s.Spec.Name, Meta: &api.Meta{Version: 9}, Spec: s.Spec}
		if s.Version == 0 {
			resp.Created = append(resp.Created, svc)
		} else {
			resp.Updated = append(resp.Updated, svc)
		}
	}
	for _, r := range req.Remove {
		for _, s := range f.services {
			if s.Id == r.Service {
				resp.Removed = append(resp.Removed, s.Spec.Name)
			}
		}
	}
	return resp, nil
}

// DeployStack answers stackvolumes_test.go's fake as the manager's
// write would, one part after the other through the fake's own
// CreateNetwork, CreateVolume and CreateService.
func (f *deployCluster) DeployStack(ctx context.Context, req *api.DeployStackRequest) (*api.DeployStackResponse, error) {
	resp := &api.DeployStackResponse{}
	for _, n := range req.Networks {
		if _, err := f.CreateNetwork(ctx, &api.CreateNetworkRequest{Spec: n}); err != nil {
			return nil, err
		}
		resp.CreatedNetworks = append(resp.CreatedNetworks, n.Name)
	}
	for _, v := range req.Volumes {
		if _, err := f.CreateVolume(ctx, &api.CreateVolumeRequest{Spec: v}); err != nil {
			return nil, err
		}
		resp.CreatedVolumes = append(resp.CreatedVolumes, v.Name)
	}
	for _, s := range req.Services {
		r, err := f.CreateService(ctx, &api.CreateServiceRequest{Spec: s.Spec})
		if err != nil {
			return nil, err
		}
		resp.Created = append(resp.Created, r.Service)
	}
	return resp, nil
}

const atomicStackFile = `services:
  db:
    image: db:1
    networks: [back]
  web:
    image: web:2
    networks: [back, front]
    depends_on: [db]
    secrets: [pw]
  worker:
    image: worker:1
    networks: [back]
    depends_on: [db]
networks:
  back:
  front:
secrets:
  pw:
    file: ./pw.txt
`

// loadAtomicStack writes atomicStackFile and returns its path and the
// specs jaco makes of it.
func loadAtomicStack(t *testing.T) (string, map[string]*api.ServiceSpec) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	for name, text := range map[string]string{file: atomicStackFile, filepath.Join(dir, "pw.txt"): "pw"} {
		if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	st, err := compose.Load(context.Background(), compose.Options{Files: []string{file}, Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	specs := map[string]*api.ServiceSpec{}
	for _, s := range st.Services {
		specs[s.Name] = s
	}
	return file, specs
}

// TestStackDeployIsOneRequest: a redeploy sends one DeployStack carrying
// what is missing or changed only (the network and secret not there yet,
// web's new image at the version read, the new worker after db), and the
// service --prune removes, and writes through no other call.
func TestStackDeployIsOneRequest(t *testing.T) {
	file, specs := loadAtomicStack(t)
	oldWeb := proto.CloneOf(specs["shop_web"])
	oldWeb.Image = "web:1"
	labels := map[string]string{compose.NamespaceLabel: "shop"}
	f := &stackCluster{
		services: []*api.Service{
			{Id: "id-db", Meta: &api.Meta{Version: 3}, Spec: specs["shop_db"]},
			{Id: "id-web", Meta: &api.Meta{Version: 7}, Spec: oldWeb},
			{Id: "id-old", Meta: &api.Meta{Version: 5}, Spec: &api.ServiceSpec{Name: "shop_old", Image: "x", Labels: labels}},
			{Id: "id-other", Meta: &api.Meta{Version: 2}, Spec: &api.ServiceSpec{Name: "other", Image: "x"}},
		},
		networks: []*api.Network{{Id: "n1", Spec: &api.NetworkSpec{Name: "shop_back", Labels: labels}}},
	}
	code, out, errOut := runJaco(serveControl(t, f), "5s", "stack", "deploy", "-d", "--prune", "-c", file, "shop")
	if code != 0 {
		t.Fatalf("deploy: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if len(f.deploys) != 1 {
		t.Fatalf("%d DeployStack calls, want 1 (calls %v)", len(f.deploys), f.calls)
	}
	if slices.ContainsFunc(f.calls, func(c string) bool { return !strings.HasPrefix(c, "List") && c != "DeployStack" }) {
		t.Fatalf("calls %v: a write besides DeployStack", f.calls)
	}
	req := f.deploys[0]
	var got []string
	for _, n := range req.Networks {
		got = append(got, "network "+n.Name)
	}
	for _, s := range req.Secrets {
		got = append(got, "secret "+s.Name+"="+string(s.Data))
	}
	for _, s := range req.Services {
		got = append(got, fmt.Sprintf("service %s@%d", s.Spec.Name, s.Version))
	}
	for _, r := range req.Remove {
		got = append(got, fmt.Sprintf("remove %s@%d", r.Service, r.Version))
	}
	want := []string{"network shop_front", "secret shop_pw=pw", "service shop_web@7", "service shop_worker@0", "remove id-old@5"}
	if req.Stack != "shop" || !slices.Equal(got, want) {
		t.Fatalf("stack %q, request %v; want shop, %v", req.Stack, got, want)
	}
	wantOut := "Creating network shop_front\nCreating secret shop_pw\nUpdating service shop_web\nCreating service shop_worker\nRemoving service shop_old\n"
	if out != wantOut {
		t.Fatalf("stdout %q, want %q", out, wantOut)
	}
}

// TestStackDeployRefused: a deploy the manager refuses prints nothing as
// created, exits 1 with the refusal, and made no other write.
func TestStackDeployRefused(t *testing.T) {
	file, _ := loadAtomicStack(t)
	f := &stackCluster{refuse: reason.Error(codes.InvalidArgument, reason.InvalidSpec, "port 8080/tcp is published by service other")}
	code, out, errOut := runJaco(serveControl(t, f), "5s", "stack", "deploy", "-d", "-c", file, "shop")
	if code != 1 || !strings.Contains(errOut, "error: invalid_spec: port 8080/tcp is published by service other") {
		t.Fatalf("deploy: exit %d, stderr %q; want 1 and the refusal", code, errOut)
	}
	if strings.Contains(out, "Creating") || len(f.deploys) != 1 {
		t.Fatalf("stdout %q after %d DeployStack calls; want nothing created, one call", out, len(f.deploys))
	}
}

// TestStackDeployTooLarge: a stack over what one request carries is
// refused before it is sent, naming its largest files.
func TestStackDeployTooLarge(t *testing.T) {
	dir := t.TempDir()
	text := "services:\n  web:\n    image: x\n    secrets: [s0, s1, s2, s3, s4, s5, s6, s7, s8]\nsecrets:\n"
	for i := range 9 {
		name := fmt.Sprintf("s%d", i)
		text += "  " + name + ":\n    file: ./" + name + "\n"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Repeat("x", 480<<10+i)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	f := &stackCluster{}
	code, _, errOut := runJaco(serveControl(t, f), "5s", "stack", "deploy", "-d", "-c", file, "shop")
	if code != 1 || !strings.Contains(errOut, "error: limit_exceeded: stack shop: the deploy encodes to") ||
		!strings.Contains(errOut, "shop_s8: 491528 bytes, shop_s7: 491527 bytes, shop_s6: 491526 bytes") {
		t.Fatalf("deploy: exit %d, stderr %q; want 1, limit_exceeded naming the largest secrets", code, errOut)
	}
	if len(f.deploys) != 0 {
		t.Fatalf("%d DeployStack calls, want none", len(f.deploys))
	}
}
