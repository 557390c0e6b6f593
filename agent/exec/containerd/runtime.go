// Package containerd runs replicas whose spec names an image as containers
// under containerd (exec.Runtime "containerd").
//
// Contract:
//   - Every name this runtime makes derives from the node id (WithNodeID):
//     the containerd namespace, the CNI network and bridge, the subnet, the
//     runc state and network-namespace directories. Several nodes on one
//     machine sharing one containerd never see each other's containers.
//   - A replica is one container named by its task id, with an overlayfs
//     snapshot of its image, its own network namespace joined to the node's
//     CNI bridge (bridge + host-local + portmap + firewall), and its stdout
//     and stderr appended to Replica.LogPath by the shim, so logs and the
//     container outlive jacod.
//   - What a later Controller needs to adopt a running replica (network
//     namespace path, address) is kept in Replica.Dir; containerd keeps the
//     rest. A Runtime made afresh for the same node finds running tasks:
//     Start returns exec.ErrAlreadyStarted and Wait follows the task.
//   - With WithIsolation, each replica's address is attached to the node's
//     isolation (agent/isolation) before its task starts, again when an
//     agent adopts it, and detached on Remove; while the isolation is not
//     usable, Prepare refuses every replica.
//   - With WithNetworks, a replica whose spec names overlay networks gets
//     eth1, eth2, … on them (agent/netattach) beside eth0, and the node's
//     DNS server (the first network's gateway) in a read-only
//     /etc/resolv.conf. How it attaches is resolved at Prepare and kept in
//     Replica.Dir with the addresses Start got, so Remove and an adopting
//     agent need nothing from the node's view. Without WithNetworks such a
//     replica is refused; a spec naming no network runs as before.
//   - A replica's secrets and configs (Replica.Files) are written to a
//     tmpfs of its own in Replica.Dir and bind-mounted read-only into the
//     container, secrets at /run/secrets/TARGET, configs at their targets
//     (secrets.go); Remove unmounts it.
//   - The spec's process and container options (docs/adr/0059) apply as
//     Docker applies them: user and groups resolved in the image, workdir,
//     ulimits, host name (unset: the node's, which the container's UTS
//     namespace starts as), capabilities, sysctls, read-only root,
//     /dev/shm's size, tmpfs mounts (options.go, mounts.go); DNS options
//     and extra hosts as read-only /etc/resolv.conf and /etc/hosts written
//     in Replica.Dir (etcfiles.go); init as the node's static tini,
//     mounted at InitPath and run as PID 1 (init.go); the stop ladder's
//     first signal is the spec's stop_signal, else the image's STOPSIGNAL.
//   - Images come from the node's content store (LoadImage, i.e. `jaco
//     image load`) or are pulled by reference when missing: over HTTPS
//     only, verified against the system trust store, with the spec's
//     registry_auth offered to its registry alone. A failed pull is an
//     *exec.PullError (denied on 401/403).
//
// Operational notes (checked on Debian 12: containerd 1.6.20, runc 1.1.5,
// containernetworking-plugins, cgroup v1 hybrid hierarchy):
//   - A published port answers on the node's addresses and on 127.0.0.1:
//     portmap's snat option DNATs locally made connections and sets
//     route_localnet on the bridge. The container's own address (Address)
//     answers from the node too.
//   - The firewall plugin accepts the containers' traffic in FORWARD; a
//     Docker engine on the machine sets that chain's policy to DROP.
//   - The shim copies output into LogPath on its own time: Wait may return
//     before the last lines are in the file.
//   - Exit codes above 128 are read as "ended by signal N" (runc reports a
//     SIGKILLed init as 137), so a process calling exit(137) reads as
//     SIGKILL too.
//   - Bridges stay when their last container goes (as with any CNI
//     bridge); New refuses a subnet that overlaps an address already on the
//     node, so two nodes in one network namespace need distinct subnets
//     (derived ones differ for most ids; WithSubnet when they do not).
package containerd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/containerd/containerd/v2/client"
	gocni "github.com/containerd/go-cni"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/netattach"
)

// Snapshotter is the containerd snapshotter replicas' root filesystems use.
const Snapshotter = "overlayfs"

// RuncRuntime is the containerd runtime (shim) replicas run under.
const RuncRuntime = "io.containerd.runc.v2"

// DefaultCNIBinDirs are searched for the CNI plugins: Debian's
// containernetworking-plugins, then the upstream default.
var DefaultCNIBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// Runtime is the containerd runtime of one node.
type Runtime struct {
	client   *client.Client
	names    Names
	stateDir string
	cni      gocni.CNI
	// isolation, when set, is told each replica's address (WithIsolation).
	isolation Isolation
	// networks, when set, resolves overlay networks (WithNetworks);
	// attacher attaches to them, with or without it (Remove needs only
	// what the replica recorded).
	networks exec.Networks
	attacher *netattach.Attacher
	// initBinary is WithInitBinary's path ("": DefaultInitBinaries).
	initBinary string
	// volumesDir is WithVolumesDir's (volumes.go).
	volumesDir string
	log        *slog.Logger
}

type options struct {
	nodeID     string
	stateDir   string
	subnet     string
	isolation  Isolation
	networks   exec.Networks
	initBinary string
	volumesDir string
	log        *slog.Logger
}

// Option configures New.
type Option func(*options)

// WithNodeID sets the node id every name derives from (required).
func WithNodeID(id string) Option { return func(o *options) { o.nodeID = id } }

// WithStateDir sets the directory for runc state, network namespaces,
// IPAM leases and the generated CNI config, written to <dir>/cni for
// operators to read (default /run/jaco/<namespace>).
func WithStateDir(dir string) Option { return func(o *options) { o.stateDir = dir } }

// WithSubnet sets the containers' subnet (CIDR) instead of the one derived
// from the node id. It must not overlap any network the node routes.
func WithSubnet(cidr string) Option { return func(o *options) { o.subnet = cidr } }

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.log = l } }

// New connects to the containerd at address (a unix socket path) and
// readies the node's CNI network. It fails when containerd does not answer.
func New(ctx context.Context, address string, opts ...Option) (*Runtime, error) {
	o := options{log: slog.Default()}
	for _, f := range opts {
		f(&o)
	}
	if o.nodeID == "" {
		return nil, errors.New("containerd runtime: node id required (names derive from it)")
	}
	names, err := NamesFor(o.nodeID, o.subnet)
	if err != nil {
		return nil, fmt.Errorf("containerd runtime: %w", err)
	}
	if err := checkPlugins(DefaultCNIBinDirs); err != nil {
		return nil, fmt.Errorf("containerd runtime: %w", err)
	}
	if err := checkSubnetFree(names); err != nil {
		return nil, fmt.Errorf("containerd runtime: %w", err)
	}
	if o.stateDir == "" {
		o.stateDir = filepath.Join("/run/jaco", names.Namespace)
	}
	confDir := filepath.Join(o.stateDir, "cni")
	for _, d := range []string{o.stateDir, confDir, filepath.Join(o.stateDir, "netns")} {
		if err := os.MkdirAll(d, 0o711); err != nil {
			return nil, fmt.Errorf("containerd runtime: %w", err)
		}
	}
	conf, err := names.CNIConfList(filepath.Join(o.stateDir, "ipam"))
	if err != nil {
		return nil, fmt.Errorf("containerd runtime: %w", err)
	}
	if err := os.WriteFile(filepath.Join(confDir, names.Network+".conflist"), conf, 0o644); err != nil {
		return nil, fmt.Errorf("containerd runtime: write cni config: %w", err)
	}
	attacher, err := netattach.New(filepath.Join(o.stateDir, "overlay"), DefaultCNIBinDirs)
	if err != nil {
		return nil, fmt.Errorf("containerd runtime: %w", err)
	}
	cni, err := gocni.New(
		gocni.WithPluginDir(DefaultCNIBinDirs),
		gocni.WithInterfacePrefix("eth"),
		gocni.WithConfListBytes(conf), // eth0
		gocni.WithLoNetwork,           // brings lo up in the container
	)
	if err != nil {
		return nil, fmt.Errorf("containerd runtime: cni: %w", err)
	}
	c, err := client.New(address, client.WithDefaultNamespace(names.Namespace))
	if err != nil {
		return nil, fmt.Errorf("containerd runtime: connect %s: %w", address, err)
	}
	if _, err := c.Version(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("containerd runtime: containerd at %s: %w", address, err)
	}
	return &Runtime{
		client:     c,
		names:      names,
		stateDir:   o.stateDir,
		cni:        cni,
		isolation:  o.isolation,
		networks:   o.networks,
		attacher:   attacher,
		initBinary: o.initBinary,
		volumesDir: o.volumesDir,
		log:        o.log.With("runtime", exec.RuntimeContainerd, "namespace", names.Namespace),
	}, nil
}

// Close closes the connection to containerd. Containers keep running.
func (r *Runtime) Close() error { return r.client.Close() }

// Name implements exec.Runtime.
func (r *Runtime) Name() string { return exec.RuntimeContainerd }

// Slots is how many containers this node can run at once: every container
// takes one address of the subnet, which also holds the network address,
// the bridge (gateway) and the broadcast address (exec.SlotLimited).
func (r *Runtime) Slots() int { return r.names.Slots() }

// Names returns the names this runtime derived from its node id.
func (r *Runtime) Names() Names { return r.names }

// Client is the containerd client (for tools and tests that look inside).
func (r *Runtime) Client() *client.Client { return r.client }

// Controller implements exec.Runtime. It does no I/O.
func (r *Runtime) Controller(rep exec.Replica) (exec.Controller, error) {
	if rep.Task == nil || rep.Task.GetSpec().GetImage() == "" {
		return nil, errors.New("containerd runtime: replica has no image")
	}
	id, err := containerID(rep.Task.GetId())
	if err != nil {
		return nil, err
	}
	if rep.Dir == "" || rep.LogPath == "" {
		return nil, errors.New("containerd runtime: replica needs Dir and LogPath")
	}
	return &controller{rt: r, rep: rep, id: id}, nil
}

func (r *Runtime) runcRoot() string { return filepath.Join(r.stateDir, "runc") }
func (r *Runtime) netnsDir() string { return filepath.Join(r.stateDir, "netns") }
