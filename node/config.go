package node

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"
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

	// SnapshotInterval and TickInterval tune the raft member (0: defaults).
	SnapshotInterval uint64
	TickInterval     time.Duration
	// QuorumLossWindow is how long a manager may be without a leader
	// before it reports quorum_lost instead of no_leader.
	QuorumLossWindow time.Duration
}

// ErrInvalidConfig wraps every error in the daemon's configuration.
var ErrInvalidConfig = errors.New("invalid configuration")

// Default values.
const (
	DefaultDataDir          = "/var/lib/jaco"
	DefaultListenAddr       = ":7000"
	DefaultQuorumLossWindow = 10 * time.Second
)

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
	if c.NodeName == "" {
		h, err := os.Hostname()
		if err != nil {
			return fmt.Errorf("%w: node name: %w", ErrInvalidConfig, err)
		}
		c.NodeName = h
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.QuorumLossWindow <= 0 {
		c.QuorumLossWindow = DefaultQuorumLossWindow
	}
	return nil
}

// Paths under the data dir (DESIGN.md §9).
func (c *Config) socketPath() string { return filepath.Join(c.DataDir, "jaco.sock") }
func (c *Config) nodeDir() string    { return filepath.Join(c.DataDir, "node") }
func (c *Config) raftDir() string    { return filepath.Join(c.DataDir, "raft") }
func (c *Config) dekPath() string    { return filepath.Join(c.nodeDir(), "raft-dek.key") }

// SocketPath is the trusted local socket of a data dir.
func SocketPath(dataDir string) string { return filepath.Join(dataDir, "jaco.sock") }

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
