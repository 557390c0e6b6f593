package containerd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/content"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/containerd/platforms"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/ociimage"
)

// usersImage is the test image with a named user and groups, and a file
// anyone may write (so a failed write shows the root is read-only, not
// that the user lacks the right).
const usersImage = "jaco.local/busybox-users:latest"

func loadUsersImage(t *testing.T, n *node) {
	t.Helper()
	var buf bytes.Buffer
	err := ociimage.Build(&buf, usersImage,
		ociimage.WithFile("/etc/passwd", []byte("root:x:0:0:root:/root:/bin/sh\napp:x:1500:1500:app:/:/bin/sh\n"), 0o644),
		ociimage.WithFile("/etc/group", []byte("root:x:0:\napp:x:1500:\nstaff:x:1600:app\nextra:x:1700:\n"), 0o644),
		ociimage.WithFile("/etc/writable", nil, 0o666))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.rt.LoadImage(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
}

// deriveImage stores image to in n's namespace: from with its config
// changed by edit (ociimage sets no STOPSIGNAL), layers shared.
func deriveImage(t *testing.T, n *node, from, to string, edit func(*ocispec.ImageConfig)) {
	t.Helper()
	cl := n.rt.Client()
	// Under a lease, lest containerd's GC take the new config before the
	// image names it.
	ctx, done, err := cl.WithLease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = done(context.WithoutCancel(ctx)) }()
	cs := cl.ContentStore()
	img, err := cl.GetImage(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	man, err := images.Manifest(ctx, cs, img.Target(), platforms.Default())
	if err != nil {
		t.Fatal(err)
	}
	b, err := content.ReadBlob(ctx, cs, man.Config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg ocispec.Image
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	edit(&cfg.Config)
	put := func(mediaType string, v any, labels map[string]string) ocispec.Descriptor {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		d := ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(b), Size: int64(len(b))}
		if err := content.WriteBlob(ctx, cs, d.Digest.String(), bytes.NewReader(b), d, content.WithLabels(labels)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	man.Config = put(man.Config.MediaType, cfg, nil)
	refs := map[string]string{"containerd.io/gc.ref.content.config": man.Config.Digest.String()}
	for i, l := range man.Layers {
		refs[fmt.Sprintf("containerd.io/gc.ref.content.l.%d", i)] = l.Digest.String()
	}
	target := put(ocispec.MediaTypeImageManifest, man, refs)
	rec, err := cl.ImageService().Create(ctx, images.Image{Name: to, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.NewImage(cl, rec).Unpack(ctx, Snapshotter); err != nil {
		t.Fatal(err)
	}
}

// logSection is what the replica printed between the lines start and end.
func logSection(log, start, end string) string {
	_, after, _ := strings.Cut(log, start+"\n")
	before, _, _ := strings.Cut(after, end+"\n")
	return before
}

// logValue is the rest of the first line starting with key.
func logValue(log, key string) string {
	for _, line := range strings.Split(log, "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			return strings.TrimSpace(v)
		}
	}
	return "<none>"
}

// defaultCapsChanged is containerd's default set less CHOWN, plus
// NET_ADMIN.
var defaultCapsChanged = capMask(unix.CAP_DAC_OVERRIDE, unix.CAP_FSETID, unix.CAP_FOWNER, unix.CAP_MKNOD,
	unix.CAP_NET_RAW, unix.CAP_SETGID, unix.CAP_SETUID, unix.CAP_SETFCAP, unix.CAP_SETPCAP,
	unix.CAP_NET_BIND_SERVICE, unix.CAP_SYS_CHROOT, unix.CAP_KILL, unix.CAP_AUDIT_WRITE, unix.CAP_NET_ADMIN)

// capMask is the /proc/PID/status bitmask of the capabilities.
func capMask(caps ...int) string {
	var m uint64
	for _, c := range caps {
		m |= 1 << c
	}
	return fmt.Sprintf("%016x", m)
}

// mountOpts are the options of the mount at target in a /proc/self/mounts
// listing.
func mountOpts(mounts, target string) []string {
	for _, line := range strings.Split(mounts, "\n") {
		if f := strings.Fields(line); len(f) >= 4 && f[1] == target {
			return strings.Split(f[3], ",")
		}
	}
	return nil
}

// One replica shows every process and container option from inside:
// the named user with its image groups and the spec's, the working
// directory runc made, the host name, capabilities (drop then add), a
// namespaced sysctl, the nofile limits, a tmpfs mount's size and mode,
// /dev/shm's size, the read-only root, a bind whose host path Prepare
// made, /etc/hosts and /etc/resolv.conf; then Stop sends the spec's stop
// signal.
func TestProcessAndContainerOptions(t *testing.T) {
	began := time.Now()
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-opts")
	loadUsersImage(t, n)
	hostDir := filepath.Join(t.TempDir(), "made", "by-prepare")
	rep := replica(t, n.id, "task-opts-1", &api.ServiceSpec{
		Image: usersImage,
		Command: []string{"sh", "-c", `echo "id: $(id -u) $(id -g) $(id -G)"
echo "pwd: $(pwd)"
echo "hostname: $(hostname)"
grep -E '^Cap(Eff|Bnd):' /proc/self/status
echo "port_start: $(cat /proc/sys/net/ipv4/ip_unprivileged_port_start)"
echo "nofile: $(ulimit -Sn) $(ulimit -Hn)"
echo "--- mounts"; cat /proc/self/mounts; echo "--- end"
(echo x >> /etc/writable) 2>/dev/null && echo "rootfs: writable" || echo "rootfs: read-only"
echo "--- hosts"; cat /etc/hosts; echo "--- end"
echo "--- resolv"; cat /etc/resolv.conf; echo "--- end"
trap 'echo "stopped by USR1"; exit 0' USR1
echo ready
while :; do sleep 1 & wait $!; done`},
		User:         "app",
		Groups:       []string{"extra", "2001"},
		Workdir:      "/work/deep",
		Hostname:     "opts-host",
		CapAdd:       []string{"net_admin"},
		CapDrop:      []string{"CAP_CHOWN"},
		Sysctls:      map[string]string{"net.ipv4.ip_unprivileged_port_start": "81"},
		Ulimits:      []*api.Ulimit{{Name: "nofile", Soft: 2048, Hard: 4096}},
		ReadOnly:     true,
		ShmSizeBytes: 128 << 20,
		Mounts: []*api.Mount{
			{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/scratch", TmpfsSizeBytes: 8 << 20, TmpfsMode: 0o1770},
			{Source: hostDir, Target: "/data", CreateHostPath: true, Readonly: true},
		},
		ExtraHosts: []string{"db.internal:10.9.8.7", "v6.internal=[fd00::1]"},
		Dns:        []string{"192.0.2.53", "192.0.2.54"},
		DnsSearch:  []string{"svc.example", "example"},
		DnsOptions: []string{"ndots:2", "timeout:1"},
		StopSignal: "SIGUSR1",
		// A wrong stop signal would wait out these, not the default 2 m.
		StopGracePeriod:  durationpb.New(5 * time.Second),
		AbortGracePeriod: durationpb.New(time.Second),
	})
	c := start(t, n.rt, rep)
	waitLog(t, rep, "ready")
	if fi, err := os.Stat(hostDir); err != nil || !fi.IsDir() {
		t.Errorf("create_host_path: %s: %v", hostDir, err)
	}
	b, err := os.ReadFile(rep.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	addr, err := c.Address(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ key, want string }{
		// app's own group, staff from the image's /etc/group, then the spec's.
		{"id:", "1500 1500 1500 1600 1700 2001"},
		{"pwd:", "/work/deep"},
		{"hostname:", "opts-host"},
		// The changed set bounds the user; execve left it no effective
		// capability (not root, no file capabilities), as under Docker.
		{"CapBnd:", defaultCapsChanged},
		{"CapEff:", capMask()},
		{"port_start:", "81"},
		{"nofile:", "2048 4096"},
		{"rootfs:", "read-only"},
	} {
		if got := logValue(log, tc.key); got != tc.want {
			t.Errorf("%s %q, want %q", tc.key, got, tc.want)
		}
	}
	mounts := logSection(log, "--- mounts", "--- end")
	for _, tc := range []struct {
		target string
		want   []string
	}{
		{"/", []string{"ro"}},
		{"/scratch", []string{"rw", "nosuid", "nodev", "noexec", "size=8192k", "mode=1770"}},
		{"/dev/shm", []string{"size=131072k"}},
		{"/data", []string{"ro"}},
		{"/etc/hosts", []string{"ro"}},
		{"/etc/resolv.conf", []string{"ro"}},
	} {
		got := mountOpts(mounts, tc.target)
		for _, w := range tc.want {
			if !slices.Contains(got, w) {
				t.Errorf("mount %s: options %v, want %s among them", tc.target, got, w)
			}
		}
	}
	wantHosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" + addr + "\topts-host\n" +
		"10.9.8.7\tdb.internal\nfd00::1\tv6.internal\n"
	if got := logSection(log, "--- hosts", "--- end"); got != wantHosts {
		t.Errorf("/etc/hosts:\n%s\nwant:\n%s", got, wantHosts)
	}
	wantResolv := "nameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch svc.example example\noptions ndots:2 timeout:1\n"
	if got := logSection(log, "--- resolv", "--- end"); got != wantResolv {
		t.Errorf("/etc/resolv.conf:\n%s\nwant:\n%s", got, wantResolv)
	}
	// A restarted agent prepares it again (its files in Replica.Dir kept,
	// nothing made twice) and stops it with the spec's stop signal.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adopted, err := n.open(t).Controller(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := adopted.Prepare(ctx); err != nil {
		t.Fatalf("prepare after an agent restart: %v", err)
	}
	if err := adopted.Start(ctx); !errors.Is(err, exec.ErrAlreadyStarted) {
		t.Fatalf("start after an agent restart = %v, want ErrAlreadyStarted", err)
	}
	if err := adopted.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if e := wait(t, adopted); e.Code != 0 {
		t.Errorf("exit %+v, want 0 (the USR1 trap)", e)
	}
	waitLog(t, rep, "stopped by USR1")
	t.Logf("took %s", time.Since(began).Round(time.Millisecond))
}

// With init, tini is PID 1 and runs the image's command (the spec sets
// none) after "--"; Stop sends the image's STOPSIGNAL, which tini
// forwards. A node without the init binary refuses such a replica at
// Prepare, naming the file and the package.
func TestInitAndImageStopSignal(t *testing.T) {
	began := time.Now()
	d := containerdtest.Start(t)
	n := newNode(t, d, "node-init")
	const img = "jaco.local/busybox-stopsignal:latest"
	// One line, so PID 1's command line prints on one.
	script := `trap 'echo "stopped by USR2"; exit 0' USR2; echo "pid1: $(tr '\0' ' ' < /proc/1/cmdline)"; ` +
		`echo "hostname: $(hostname)"; grep '^CapEff:' /proc/self/status; echo ready; while :; do sleep 1 & wait $!; done`
	deriveImage(t, n, testImage, img, func(c *ocispec.ImageConfig) {
		c.StopSignal = "SIGUSR2"
		c.Cmd = []string{"sh", "-c", script}
	})
	spec := &api.ServiceSpec{Image: img, Init: true, CapAdd: []string{"NET_ADMIN"}, CapDrop: []string{"CHOWN"},
		StopGracePeriod: durationpb.New(5 * time.Second), AbortGracePeriod: durationpb.New(time.Second)}

	t.Run("missing init binary", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "tini-static")
		c, err := n.open(t, WithInitBinary(missing)).Controller(replica(t, n.id, "task-noinit-1", spec))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Prepare(context.Background())
		if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "package tini") {
			t.Fatalf("prepare without the init binary = %v; want an error naming %s and the package tini", err, missing)
		}
	})

	rep := replica(t, n.id, "task-init-1", spec)
	c := start(t, n.rt, rep)
	// A line of its own: the pid1 line quotes the script, "ready" too.
	waitLog(t, rep, "\nready\n")
	b, err := os.ReadFile(rep.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	if got, want := logValue(log, "pid1:"), InitPath+" -- sh -c "+script; got != want {
		t.Errorf("PID 1 runs %q, want %q", got, want)
	}
	// root's effective set is the changed one (a non-root user's is
	// empty after execve, as under Docker).
	if got, want := logValue(log, "CapEff:"), defaultCapsChanged; got != want {
		t.Errorf("CapEff %s, want %s", got, want)
	}
	// Without a hostname in the spec the container is named as Docker
	// names one: its container id's first 12 characters (here the task id).
	if got := logValue(log, "hostname:"); got != "task-init-1" {
		t.Errorf("hostname %q, want the container id's first 12 characters, task-init-1", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if e := wait(t, c); e.Code != 0 {
		t.Errorf("exit %+v, want 0 (the USR2 trap, through tini)", e)
	}
	waitLog(t, rep, "stopped by USR2")
	t.Logf("took %s", time.Since(began).Round(time.Millisecond))
}

// Capabilities change as Docker changes them: ALL added keeps all but
// the dropped, ALL dropped keeps only the added, else drop then add.
func TestCapabilitySets(t *testing.T) {
	base := []string{"CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW"}
	all := len(allCaps(t))
	for _, tc := range []struct {
		name      string
		add, drop []string
		want      func([]string) bool
	}{
		{"drop then add", []string{"NET_ADMIN", "kill"}, []string{"chown"},
			func(c []string) bool { return slices.Equal(c, []string{"CAP_KILL", "CAP_NET_ADMIN", "CAP_NET_RAW"}) }},
		{"drop all, add one", []string{"NET_ADMIN"}, []string{"ALL"},
			func(c []string) bool { return slices.Equal(c, []string{"CAP_NET_ADMIN"}) }},
		{"add all, drop one", []string{"all"}, []string{"SYS_ADMIN"},
			func(c []string) bool { return len(c) == all-1 && !slices.Contains(c, "CAP_SYS_ADMIN") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &api.ServiceSpec{CapAdd: tc.add, CapDrop: tc.drop}
			s := applyOpts(t, spec, base)
			if got := s.Process.Capabilities; !tc.want(got.Bounding) || !slices.Equal(got.Bounding, got.Effective) || !slices.Equal(got.Bounding, got.Permitted) {
				t.Fatalf("capabilities %+v", got)
			}
		})
	}
	if _, err := containerOpts(&api.ServiceSpec{CapAdd: []string{"FLY"}}, "id"); err == nil || !strings.Contains(err.Error(), "cap_add") {
		t.Errorf("an unknown capability = %v, want a cap_add error", err)
	}
	if _, err := containerOpts(&api.ServiceSpec{Sysctls: map[string]string{"kernel.hostname": "x"}}, "id"); err == nil {
		t.Error("a node-wide sysctl was taken")
	}
}

func allCaps(t *testing.T) []string {
	s := applyOpts(t, &api.ServiceSpec{CapAdd: []string{"ALL"}}, nil)
	return s.Process.Capabilities.Bounding
}

// applyOpts applies the spec's container options to a spec holding caps.
func applyOpts(t *testing.T, spec *api.ServiceSpec, caps []string) *oci.Spec {
	t.Helper()
	opts, err := containerOpts(spec, "replica-id")
	if err != nil {
		t.Fatal(err)
	}
	s := &oci.Spec{Process: &specs.Process{Capabilities: &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps}}}
	for _, o := range opts {
		if err := o(context.Background(), nil, nil, s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// The resolv.conf a replica gets: the overlay one, with each DNS option
// replacing its lines; only the DNS options off overlay networks; none
// with neither.
func TestResolvConfContent(t *testing.T) {
	atts := overlayAtts(t)
	for _, tc := range []struct {
		name string
		spec *api.ServiceSpec
		atts bool
		want string
	}{
		{"overlay only", &api.ServiceSpec{}, true, "nameserver 10.1.0.1\noptions ndots:0\n"},
		{"overlay, search added", &api.ServiceSpec{DnsSearch: []string{"a.example"}}, true,
			"nameserver 10.1.0.1\noptions ndots:0\nsearch a.example\n"},
		{"overlay, dns replaces the node's server", &api.ServiceSpec{Dns: []string{"192.0.2.1"}, DnsOptions: []string{"ndots:3"}}, true,
			"nameserver 192.0.2.1\noptions ndots:3\n"},
		{"no overlay, dns", &api.ServiceSpec{Dns: []string{"2001:db8::1"}}, false, "nameserver 2001:db8::1\n"},
		{"neither", &api.ServiceSpec{}, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a = atts
			if !tc.atts {
				a = nil
			}
			got, err := resolvConfContent(tc.spec, a)
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	for _, bad := range []*api.ServiceSpec{{Dns: []string{"dns.example"}}, {DnsOptions: []string{"ndots:1\nnameserver 6.6.6.6"}}} {
		if _, err := resolvConfContent(bad, nil); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := hostsContent("h", "10.0.0.2", []string{"nocolon"}); err == nil {
		t.Error("an extra host without an address: no error")
	}
}

func overlayAtts(t *testing.T) []exec.Attachment {
	t.Helper()
	return []exec.Attachment{{Gateway: mustAddr(t, "10.1.0.1")}}
}
