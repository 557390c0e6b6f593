package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/jaco-project/jaco/api/nodename"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/manager/dashboard"
	"github.com/jaco-project/jaco/node/formation"
)

// Config configures a daemon.
type Config struct {
	// DataDir holds everything the node keeps ($JACO_DATA_DIR).
	DataDir string
	// ListenAddr is the TCP address every gRPC service listens on.
	ListenAddr string
	// AdvertiseAddr is the address other nodes dial; empty derives it from
	// ListenAddr and the host's addresses.
	AdvertiseAddr string
	// NodeName is the node's hostname in the cluster; empty means os.Hostname.
	NodeName string
	Logger   *slog.Logger
	// MetricsAddr is the HTTP address Prometheus metrics are served on
	// (/metrics); empty serves none.
	MetricsAddr string
	// DashboardAddr is the loopback HTTP address the web dashboard is
	// served on; empty serves none.
	DashboardAddr string

	// SnapshotInterval and TickInterval tune the raft member (0: defaults).
	SnapshotInterval uint64
	TickInterval     time.Duration
	// QuorumLossWindow is how long a manager may be without a leader
	// before it reports quorum_lost instead of no_leader (0:
	// manager.DefaultQuorumLossWindow).
	QuorumLossWindow time.Duration
	// GCHeadroom is the heap growth a manager allows the garbage
	// collector at least (manager.WithGCHeadroom; 0: GOGC alone).
	GCHeadroom uint64

	// ContainerdAddress is the containerd socket image replicas run
	// through; empty runs hook bundles only.
	ContainerdAddress string
	// ContainerSubnet is the CNI bridge subnet for this node's containers;
	// empty derives one from the node id.
	ContainerSubnet string
	// VolumesDir holds the named volumes living on this node (empty:
	// DATA_DIR/volumes; docs/adr/0061-volumes.md).
	VolumesDir string
	// NoOverlay keeps the node off the overlay: it publishes its overlay
	// unavailable and runs no replica on a network (docs/adr/0026).
	NoOverlay bool
	// OverlayPort is the UDP port the overlay link listens on (0: 51871);
	// OverlayInterface its name (empty: jaco0).
	OverlayPort      int
	OverlayInterface string
	// HeartbeatPeriod is what the dispatcher asks of agents while this
	// manager leads (0: 5 s); a node missing three is down.
	HeartbeatPeriod time.Duration
	// MinBackupInterval lowers the shortest scheduled-backup interval
	// accepted while this manager leads (0: one minute); tests only.
	MinBackupInterval time.Duration

	// CertLifetime is the lifetime of the node certificates this node
	// signs while it leads (0: 90 days). Nodes renew theirs at two thirds
	// of it.
	CertLifetime time.Duration
	// RoleCheckInterval is how often the node asks the leader for the role
	// the cluster holds for it (promote / demote) and whether its
	// certificate is due for renewal (0: 2 s).
	RoleCheckInterval time.Duration

	// ForceNewCluster rewrites this manager's raft state at start as a
	// cluster with it the sole voter (the others blacklisted), for a
	// majority lost for good. One-shot: a forced state is left alone.
	ForceNewCluster bool

	// Formation without `cluster init` (docs/adr/0013, 0014).
	// JoinSecretFile holds the secret formation joins prove.
	JoinSecretFile string
	// Bootstrap: ordinal formation; ordinal 0 of the node name bootstraps
	// when nothing answers at JoinAddrs, every node joins through them.
	Bootstrap bool
	JoinAddrs []string
	// InitialCluster: static formation, "name=host:port,...".
	InitialCluster string
	// FormationDelay is how long a static node waits before it forms.
	FormationDelay time.Duration
	// formation is what the formation flags resolve to (setDefaults).
	formation formation.Settings
}

// ErrInvalidConfig wraps every error in the daemon's configuration.
var ErrInvalidConfig = errors.New("invalid configuration")

// Default values.
const (
	DefaultDataDir    = datadir.Default
	DefaultListenAddr = ":7000"
	// DefaultRoleCheckInterval: a promotion or demotion reaches the node
	// within this after the leader carried out its part.
	DefaultRoleCheckInterval = 2 * time.Second
	// DefaultFormationDelay is how long a statically formed node waits
	// after it starts before it initializes.
	DefaultFormationDelay = formation.DefaultDelay
)

// ErrInitialClusterWithState refuses --initial-cluster on a node that
// already has raft state: the configuration is for forming only.
var ErrInitialClusterWithState = formation.ErrInitialClusterWithState

func (c *Config) setDefaults() error {
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return fmt.Errorf("%w: data dir %q: %w", ErrInvalidConfig, c.DataDir, err)
	}
	c.DataDir = abs
	if c.ListenAddr == "" {
		c.ListenAddr = DefaultListenAddr
	}
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		return fmt.Errorf("%w: listen address %q: %w", ErrInvalidConfig, c.ListenAddr, err)
	}
	if c.AdvertiseAddr != "" {
		if _, _, err := net.SplitHostPort(c.AdvertiseAddr); err != nil {
			return fmt.Errorf("%w: advertise address %q: %w", ErrInvalidConfig, c.AdvertiseAddr, err)
		}
	}
	if c.DashboardAddr != "" {
		if err := dashboard.CheckAddr(c.DashboardAddr); err != nil {
			return fmt.Errorf("%w: --dashboard-addr: %w", ErrInvalidConfig, err)
		}
	}
	if c.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("%w: node name: %w", ErrInvalidConfig, err)
		}
		c.NodeName = h
	}
	// The leader refuses a join under a name that is not a host name;
	// refusing it here says so at start, and names the flag to fix.
	if err := nodename.Check(c.NodeName); err != nil {
		return fmt.Errorf("%w: --node-name (default: this host's name): %w", ErrInvalidConfig, err)
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.CertLifetime < 0 {
		return fmt.Errorf("%w: negative certificate lifetime %s", ErrInvalidConfig, c.CertLifetime)
	}
	if c.RoleCheckInterval <= 0 {
		c.RoleCheckInterval = DefaultRoleCheckInterval
	}
	f, err := formation.Parse(formation.Flags{NodeName: c.NodeName, JoinSecretFile: c.JoinSecretFile,
		Bootstrap: c.Bootstrap, JoinAddrs: c.JoinAddrs, InitialCluster: c.InitialCluster, Delay: c.FormationDelay})
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	c.formation = f
	return nil
}

// Paths under the data dir (docs/design.md §12).
func (c *Config) dir() datadir.Dir   { return datadir.Dir(c.DataDir) }
func (c *Config) socketPath() string { return c.dir().Socket() }
func (c *Config) nodeDir() string    { return c.dir().Node() }
func (c *Config) raftDir() string    { return c.dir().Raft() }
func (c *Config) dekPath() string    { return c.dir().DataKeys() }

// managersPath is managers.json (roles.LoadManagers).
func (c *Config) managersPath() string { return c.dir().JoinManagers() }

// volumesDir is where the named volumes living on this node are kept.
func (c *Config) volumesDir() string {
	if c.VolumesDir != "" {
		return c.VolumesDir
	}
	return c.dir().Volumes()
}

// advertiseAddr picks the address to advertise for a TCP listener bound
// at bound: the configured one, else the bound host when it is specific,
// else the first global unicast IPv4 address of this host, else loopback.
func (c *Config) advertiseAddr(bound net.Addr) string {
	if c.AdvertiseAddr != "" {
		return c.AdvertiseAddr
	}
	tcp, ok := bound.(*net.TCPAddr)
	if !ok {
		return bound.String()
	}
	port := fmt.Sprint(tcp.Port)
	if !tcp.IP.IsUnspecified() {
		return net.JoinHostPort(tcp.IP.String(), port)
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsGlobalUnicast() {
			return net.JoinHostPort(ipn.IP.String(), port)
		}
	}
	return net.JoinHostPort("127.0.0.1", port)
}
