package main

import (
	"bytes"
	"context"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/internal/compose"
	"github.com/jaco-project/jaco/internal/datadir"
)

// volumeCluster is a Control API holding a stack's services and volumes.
// RemoveVolume is refused volume_in_use while a service names the volume
// (users) or while replicas are still stopping (stopping: that many more
// refusals), as the manager refuses it; every call is logged in order.
type volumeCluster struct {
	api.UnimplementedControlServiceServer
	mu       sync.Mutex
	services []*api.Service
	volumes  map[string]*api.Volume
	users    map[string][]string
	stopping map[string]int
	log      []string
}

func (f *volumeCluster) record(s string) {
	f.log = append(f.log, s)
}

func (f *volumeCluster) ListServices(context.Context, *api.ListServicesRequest) (*api.ListServicesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &api.ListServicesResponse{Services: slices.Clone(f.services)}, nil
}

func (f *volumeCluster) RemoveService(_ context.Context, req *api.RemoveServiceRequest) (*api.RemoveServiceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("rm service " + req.Service)
	f.services = slices.DeleteFunc(f.services, func(s *api.Service) bool { return s.Id == req.Service })
	return &api.RemoveServiceResponse{}, nil
}

func (f *volumeCluster) ListNetworks(context.Context, *api.ListNetworksRequest) (*api.ListNetworksResponse, error) {
	return &api.ListNetworksResponse{}, nil
}

func (f *volumeCluster) ListSecrets(context.Context, *api.ListSecretsRequest) (*api.ListSecretsResponse, error) {
	return &api.ListSecretsResponse{}, nil
}

func (f *volumeCluster) ListConfigs(context.Context, *api.ListConfigsRequest) (*api.ListConfigsResponse, error) {
	return &api.ListConfigsResponse{}, nil
}

func (f *volumeCluster) ListVolumes(context.Context, *api.ListVolumesRequest) (*api.ListVolumesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	resp := &api.ListVolumesResponse{}
	for _, name := range slices.Sorted(maps.Keys(f.volumes)) {
		resp.Volumes = append(resp.Volumes, proto.CloneOf(f.volumes[name]))
	}
	return resp, nil
}

func (f *volumeCluster) GetVolume(_ context.Context, req *api.GetVolumeRequest) (*api.GetVolumeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.volumes[req.Volume]
	if v == nil {
		return nil, reason.Error(codes.NotFound, reason.NotFound, "no volume %s", req.Volume)
	}
	return &api.GetVolumeResponse{Volume: proto.CloneOf(v), Services: f.users[req.Volume]}, nil
}

func (f *volumeCluster) RemoveVolume(_ context.Context, req *api.RemoveVolumeRequest) (*api.RemoveVolumeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := req.Volume
	if f.volumes[name] == nil {
		return nil, reason.Error(codes.NotFound, reason.NotFound, "no volume %s", name)
	}
	if users := f.users[name]; len(users) > 0 {
		f.record("refused volume " + name)
		return nil, reason.Error(codes.FailedPrecondition, reason.VolumeInUse, "volume %s is used by services %s", name, strings.Join(users, ", "))
	}
	if f.stopping[name] != 0 {
		f.stopping[name]--
		f.record("refused volume " + name)
		return nil, reason.Error(codes.FailedPrecondition, reason.VolumeInUse, "volume %s is used by replicas that have not ended yet", name)
	}
	f.record("rm volume " + name)
	delete(f.volumes, name)
	return &api.RemoveVolumeResponse{}, nil
}

// newVolumeCluster holds stack shop: service db (grace periods of 0, so
// the wait is --timeout alone) mounting shop_db-data, and volumes of
// every kind: the stack's two, an external one, another stack's, and one
// named shop_* without the label.
func newVolumeCluster() *volumeCluster {
	zero := durationpb.New(0)
	vol := func(name string, labels map[string]string) *api.Volume {
		return &api.Volume{Id: "id-" + name, Spec: &api.VolumeSpec{Name: name, Driver: api.LocalVolumeDriver, Labels: labels}}
	}
	shop := map[string]string{compose.NamespaceLabel: "shop"}
	return &volumeCluster{
		services: []*api.Service{{Id: "svc-db", Meta: &api.Meta{}, Spec: &api.ServiceSpec{
			Name: "shop_db", Image: "x", Labels: shop, StopGracePeriod: zero, AbortGracePeriod: zero,
			Mounts: []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "shop_db-data", Target: "/data"}},
		}}},
		volumes: map[string]*api.Volume{
			"shop_db-data": vol("shop_db-data", map[string]string{compose.NamespaceLabel: "shop", "tier": "data"}),
			"shop_logs":    vol("shop_logs", shop),
			"corp-data":    vol("corp-data", nil),
			"other_data":   vol("other_data", map[string]string{compose.NamespaceLabel: "other"}),
			"shop_hand":    vol("shop_hand", nil),
		},
		users:    map[string][]string{},
		stopping: map[string]int{},
	}
}

// serveControl serves f on a data dir's socket and returns the dir.
func serveControl(t *testing.T, f api.ControlServiceServer) string {
	t.Helper()
	dir := t.TempDir()
	lis, err := net.Listen("unix", datadir.Dir(dir).Socket())
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	api.RegisterControlServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return dir
}

// runJaco runs the CLI against dir with --timeout timeout.
func runJaco(dir, timeout string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"--data-dir", dir, "--timeout", timeout}, args...), strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestStackRmKeepsVolumes: without --volumes the stack's volumes stay,
// named in one line with how to remove them; nothing asks to remove one.
func TestStackRmKeepsVolumes(t *testing.T) {
	f := newVolumeCluster()
	dir := serveControl(t, f)
	code, out, errOut := runJaco(dir, "5s", "stack", "rm", "shop")
	want := "Keeping volumes shop_db-data, shop_logs (their data stays); remove them with jaco stack rm --volumes shop, or jaco volume rm NAME once their replicas have stopped\n"
	if code != 0 || !strings.Contains(out, "Removing service shop_db\n") || !strings.HasSuffix(out, want) {
		t.Fatalf("stack rm: exit %d, stdout %q, stderr %q; want the service removed and the line %q", code, out, errOut, want)
	}
	if strings.Count(out, "Keeping") != 1 {
		t.Errorf("stdout %q: want one line about the volumes", out)
	}
	if got := strings.Join(f.log, "; "); got != "rm service svc-db" {
		t.Errorf("calls: %s; want the service removed and no volume", got)
	}
	// With only its volumes left, the stack is still there to be named.
	code, out, errOut = runJaco(dir, "5s", "stack", "rm", "shop")
	if code != 0 || out != want {
		t.Fatalf("stack rm of a stack with only volumes left: exit %d, stdout %q, stderr %q; want the line alone", code, out, errOut)
	}
}

// TestStackRmVolumes: --volumes removes the volumes labelled as the
// stack's after its services, waiting while the removed replicas stop;
// never the external one, another stack's, or one merely named shop_*.
func TestStackRmVolumes(t *testing.T) {
	f := newVolumeCluster()
	f.stopping["shop_db-data"] = 3
	dir := serveControl(t, f)
	code, out, errOut := runJaco(dir, "10s", "stack", "rm", "--volumes", "shop")
	if code != 0 || strings.Contains(out, "Keeping") || !strings.Contains(out, "Waiting for the replicas using volume shop_db-data to stop\n") {
		t.Fatalf("stack rm --volumes: exit %d, stdout %q, stderr %q; want 0 after waiting", code, out, errOut)
	}
	want := "rm service svc-db; refused volume shop_db-data; refused volume shop_db-data; refused volume shop_db-data; " +
		"rm volume shop_db-data; rm volume shop_logs"
	if got := strings.Join(f.log, "; "); got != want {
		t.Errorf("calls:\n%s\nwant\n%s", got, want)
	}
	for _, kept := range []string{"corp-data", "other_data", "shop_hand"} {
		if f.volumes[kept] == nil {
			t.Errorf("volume %s was removed; it is not labelled as shop's", kept)
		}
	}
}

// TestStackRmVolumesDeadline: replicas that never end keep their volume,
// reported once the wait (the stop ladder, here 0, plus --timeout) is
// over; the other volume still goes.
func TestStackRmVolumesDeadline(t *testing.T) {
	f := newVolumeCluster()
	f.stopping["shop_db-data"] = -1 // never ends
	dir := serveControl(t, f)
	start := time.Now()
	code, _, errOut := runJaco(dir, "1s", "stack", "rm", "--volumes", "shop")
	took := time.Since(start)
	if code != 1 || !strings.Contains(errOut, "volume shop_db-data is kept: the stack's replicas using it have not ended in time") {
		t.Fatalf("stack rm --volumes with a replica that never stops: exit %d, stderr %q; want 1 naming the volume kept", code, errOut)
	}
	if took < time.Second || took > 10*time.Second {
		t.Errorf("gave up after %v; want about --timeout (1s)", took)
	}
	if f.volumes["shop_logs"] != nil || f.volumes["shop_db-data"] == nil {
		t.Errorf("volumes left: %v; want shop_logs removed and shop_db-data kept", slices.Sorted(maps.Keys(f.volumes)))
	}
}

// TestStackRmVolumesUsedElsewhere: a volume of the stack that a service
// outside it mounts is not waited for: waiting would not free it. The
// refusal is reported with its reason word, at once.
func TestStackRmVolumesUsedElsewhere(t *testing.T) {
	f := newVolumeCluster()
	f.users["shop_logs"] = []string{"audit"}
	dir := serveControl(t, f)
	code, _, errOut := runJaco(dir, "30s", "stack", "rm", "--volumes", "shop")
	if code != 1 || !strings.Contains(errOut, "volume_in_use") || !strings.Contains(errOut, "used by services audit") {
		t.Fatalf("stack rm --volumes: exit %d, stderr %q; want volume_in_use naming audit", code, errOut)
	}
	if n := strings.Count(strings.Join(f.log, ";"), "refused volume shop_logs"); n != 1 {
		t.Errorf("shop_logs was tried %d times; want once (calls %v)", n, f.log)
	}
	if f.volumes["shop_db-data"] != nil {
		t.Error("shop_db-data was not removed")
	}
}

// TestStackRmFlags: --volumes is a flag of stack rm alone.
func TestStackRmFlags(t *testing.T) {
	t.Setenv("JACO_SERVER", "")
	t.Setenv("JACO_TOKEN", "")
	for _, c := range []badInput{
		usage("accepts 1 arg(s), received 0", "stack", "rm", "--volumes"),
		usage("unknown flag: --volumes", "stack", "deploy", "--volumes", "-c", "x.yaml", "shop"),
		usage(`invalid argument "maybe" for "--volumes"`, "stack", "rm", "--volumes=maybe", "shop"),
	} {
		code, _, errOut := runJaco(t.TempDir(), "1s", c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("jaco %s: exit %d, stderr %q; want exit %d and %q", strings.Join(c.args, " "), code, errOut, c.code, c.want)
		}
	}
}

// deployCluster answers what stack deploy asks: no services, networks,
// secrets or configs yet, the volumes given; it records the volumes and
// services created.
type deployCluster struct {
	volumeCluster
	created []*api.VolumeSpec
	specs   []*api.ServiceSpec
}

func (f *deployCluster) CreateNetwork(_ context.Context, req *api.CreateNetworkRequest) (*api.CreateNetworkResponse, error) {
	return &api.CreateNetworkResponse{Network: &api.Network{Id: "n", Spec: req.Spec}}, nil
}

func (f *deployCluster) CreateVolume(_ context.Context, req *api.CreateVolumeRequest) (*api.CreateVolumeResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, req.Spec)
	return &api.CreateVolumeResponse{Volume: &api.Volume{Id: "v", Spec: req.Spec}}, nil
}

func (f *deployCluster) CreateService(_ context.Context, req *api.CreateServiceRequest) (*api.CreateServiceResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.specs = append(f.specs, req.Spec)
	return &api.CreateServiceResponse{Service: &api.Service{Id: "s", Meta: &api.Meta{}, Spec: req.Spec}}, nil
}

// TestStackDeployVolumes: the deploy creates the stack's volumes,
// labelled and with the file's options, before the services; it leaves
// an existing one and an external one as they are; and it refuses, before
// any write, a missing external volume or an existing one whose options
// differ from the file's.
func TestStackDeployVolumes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "compose.yaml")
	if err := os.WriteFile(file, []byte(`services:
  db:
    image: x
    volumes: ["db-data:/data:nocopy", "scratch:/s:nocopy", "corp:/c:nocopy", "kept:/k:nocopy"]
volumes:
  db-data:
    labels: {tier: data}
  scratch:
    driver_opts: {type: tmpfs, o: size=1m}
  corp:
    external: true
  kept:
`), 0o600); err != nil {
		t.Fatal(err)
	}
	vol := func(name string, opts map[string]string) *api.Volume {
		return &api.Volume{Id: "id-" + name, Spec: &api.VolumeSpec{Name: name, Driver: api.LocalVolumeDriver, Options: opts}}
	}
	t.Run("creates", func(t *testing.T) {
		f := &deployCluster{volumeCluster: volumeCluster{volumes: map[string]*api.Volume{"corp": vol("corp", nil), "shop_kept": vol("shop_kept", nil)}}}
		code, out, errOut := runJaco(serveControl(t, f), "5s", "stack", "deploy", "-d", "-c", file, "shop")
		if code != 0 {
			t.Fatalf("deploy: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
		want := []*api.VolumeSpec{
			{Name: "shop_db-data", Driver: "local", Labels: map[string]string{"tier": "data", compose.NamespaceLabel: "shop"}},
			{Name: "shop_scratch", Driver: "local", Options: map[string]string{"type": "tmpfs", "o": "size=1m"}, Labels: map[string]string{compose.NamespaceLabel: "shop"}},
		}
		if len(f.created) != len(want) || !proto.Equal(f.created[0], want[0]) || !proto.Equal(f.created[1], want[1]) {
			t.Errorf("volumes created %v, want %v", f.created, want)
		}
		if i, j := strings.Index(out, "Creating volume shop_scratch"), strings.Index(out, "Creating service shop_db"); i < 0 || j < i {
			t.Errorf("stdout %q: want the volumes created before the service", out)
		}
		if len(f.specs) != 1 || len(f.specs[0].Mounts) != 4 || f.specs[0].Mounts[2].Source != "corp" {
			t.Errorf("services created %v", f.specs)
		}
	})
	for _, tc := range []struct {
		name string
		have map[string]*api.Volume
		want string
	}{
		{"external missing", map[string]*api.Volume{}, "external volume corp does not exist (jaco volume create corp)"},
		{"options differ", map[string]*api.Volume{"corp": vol("corp", nil), "shop_scratch": vol("shop_scratch", map[string]string{"type": "tmpfs"})},
			"volume shop_scratch exists with other driver options (type=tmpfs) than the file gives (o=size=1m,type=tmpfs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &deployCluster{volumeCluster: volumeCluster{volumes: tc.have}}
			code, out, errOut := runJaco(serveControl(t, f), "5s", "stack", "deploy", "-d", "-c", file, "shop")
			if code != 1 || !strings.Contains(errOut, tc.want) {
				t.Fatalf("deploy: exit %d, stderr %q; want 1 and %q", code, errOut, tc.want)
			}
			if len(f.created)+len(f.specs) != 0 || strings.Contains(out, "Creating") {
				t.Errorf("deploy wrote before refusing: %q, volumes %v, services %v", out, f.created, f.specs)
			}
		})
	}
}

// TestSameSpecVolumes: the id and options the manager fills into a named
// volume mount are no change; another volume is.
func TestSameSpecVolumes(t *testing.T) {
	desired := &api.ServiceSpec{Name: "s_db", Image: "x", Mounts: []*api.Mount{
		{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "s_data", Target: "/d"},
		{Type: api.MountType_MOUNT_TYPE_VOLUME, Target: "/anon"},
	}}
	stored := proto.Clone(desired).(*api.ServiceSpec)
	stored.Mounts[0].VolumeId, stored.Mounts[0].VolumeOptions = "vid", map[string]string{"type": "tmpfs"}
	if !sameSpec(stored, desired) {
		t.Error("a stored spec with the volume's id and options differs from the file's")
	}
	if stored.Mounts[0].VolumeId != "vid" {
		t.Error("sameSpec changed its arguments")
	}
	changed := proto.Clone(desired).(*api.ServiceSpec)
	changed.Mounts[0].Source = "s_other"
	if sameSpec(stored, changed) {
		t.Error("another volume compares equal")
	}
}
