package hooks

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/netattach"
)

// ShimCommand is the hidden jacod subcommand that runs the shim:
// "jacod hook-shim DIR". jacod's main must hand it to ShimMain before any
// other argument parsing.
const ShimCommand = "hook-shim"

// Defaults of the runtime's options.
const (
	DefaultPrepareBackoff = time.Second
	DefaultPollInterval   = 100 * time.Millisecond
	// DefaultKillWait is how long Stop waits for the shim after it asked
	// for SIGKILL before killing launch's group and the shim itself.
	DefaultKillWait = 5 * time.Second
	// DefaultPrepareStartLimit is how often prepare is tried when the
	// bundle does not say.
	DefaultPrepareStartLimit = 10
)

// ErrInvalidBundle is returned for a bundle the runtime will not run: no
// launch, or a file name other than prepare, launch, finish and cleanup.
var ErrInvalidBundle = errors.New("invalid hook bundle")

// ErrShimLost is returned by Wait when the shim is gone without having
// recorded how launch ended (it was killed, or the node rebooted).
var ErrShimLost = errors.New("hook shim ended without recording the exit of launch")

// Runtime runs hook bundles. It holds no per-replica state in memory:
// everything lives in each replica's Dir, so any Runtime (a new jacod
// process) can pick a replica up.
type Runtime struct {
	shimArgv       []string
	shimEnv        []string
	prepareBackoff time.Duration
	pollInterval   time.Duration
	killWait       time.Duration
	log            *slog.Logger

	// Overlay networks (WithNetworks); nil when the node has none.
	nets     exec.Networks
	attacher *netattach.Attacher
	netnsDir string

	// volumesDir is the node's volumes dir (WithVolumesDir).
	volumesDir string
}

// Option configures a Runtime.
type Option func(*Runtime)

// WithShim sets the command that runs the shim; the replica's Dir is
// appended to argv. extraEnv is added to the environment the shim
// inherits (tests use it to make their test binary act as the shim).
// The default is this executable with ShimCommand.
func WithShim(argv []string, extraEnv ...string) Option {
	return func(r *Runtime) {
		r.shimArgv = append([]string(nil), argv...)
		r.shimEnv = append([]string(nil), extraEnv...)
	}
}

// WithPrepareBackoff sets the pause between failed prepare attempts.
func WithPrepareBackoff(d time.Duration) Option {
	return func(r *Runtime) { r.prepareBackoff = d }
}

// WithPollInterval sets how often Wait and Stop look at the shim.
func WithPollInterval(d time.Duration) Option {
	return func(r *Runtime) { r.pollInterval = d }
}

// WithKillWait sets how long Stop waits for the shim after SIGKILL.
func WithKillWait(d time.Duration) Option {
	return func(r *Runtime) { r.killWait = d }
}

// WithNetworks lets replicas whose spec names networks join them (see
// the package comment): nets resolves the attachments, attacher attaches
// the replicas' network namespaces, which are bind-mounted under
// netnsDir. The attacher keeps the leases of the nodes' blocks, so it
// must be the one the node's other runtimes use, and netnsDir and the
// attacher's state must outlive jacod: a later runtime tears down what
// an earlier one set up. Without this option, a replica with networks
// fails to prepare.
func WithNetworks(nets exec.Networks, attacher *netattach.Attacher, netnsDir string) Option {
	return func(r *Runtime) {
		r.nets, r.attacher, r.netnsDir = nets, attacher, netnsDir
	}
}

// WithVolumesDir sets the node's volumes dir (jacod --volumes-dir), the
// one the containerd runtime is given: a named volume is the same
// directory whichever runtime mounts it. Without it, a replica mounting a
// named volume fails to prepare.
func WithVolumesDir(dir string) Option {
	return func(r *Runtime) { r.volumesDir = dir }
}

// WithLogger sets the logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(r *Runtime) { r.log = l }
}

// New returns a hooks runtime.
func New(opts ...Option) *Runtime {
	r := &Runtime{
		prepareBackoff: DefaultPrepareBackoff,
		pollInterval:   DefaultPollInterval,
		killWait:       DefaultKillWait,
		log:            slog.Default(),
	}
	for _, o := range opts {
		o(r)
	}
	if len(r.shimArgv) == 0 {
		self, err := os.Executable()
		if err != nil {
			// Start reports it: the shim command will not run.
			self = "/proc/self/exe"
		}
		r.shimArgv = []string{self, ShimCommand}
	}
	return r
}

// Name implements exec.Runtime.
func (r *Runtime) Name() string { return exec.RuntimeHooks }

// Controller implements exec.Runtime. It checks the replica is a hook
// replica and does no I/O.
func (r *Runtime) Controller(rep exec.Replica) (exec.Controller, error) {
	if rep.Task == nil || rep.Task.GetSpec().GetBundle() == nil {
		return nil, fmt.Errorf("%w: replica %s has no bundle", ErrInvalidBundle, rep.Task.GetId())
	}
	if rep.Dir == "" || rep.LogPath == "" {
		return nil, fmt.Errorf("hooks controller for replica %s: Dir and LogPath are required", rep.Task.GetId())
	}
	if err := validateBundle(rep.Task.GetSpec().GetBundle().GetFiles()); err != nil {
		return nil, fmt.Errorf("replica %s: %w", rep.Task.GetId(), err)
	}
	return &controller{rt: r, rep: rep, log: r.log.With("task_id", rep.Task.GetId(), "service_name", rep.Task.GetServiceName())}, nil
}
