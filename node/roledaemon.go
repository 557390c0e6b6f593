package node

import (
	"errors"
	"fmt"
	"os"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager"
	"github.com/jaco-project/jaco/node/roles"
)

// The role and certificate check, the CA rotation's node side and the
// address check run in package roles (docs/design.md §4, "Roles"). This
// file is the daemon as that package sees it: roleDaemon implements
// roles.Daemon and roles.Files over the node's fields and helpers.
// Starting and stopping the manager and the keys' sealing stay here; a
// promoted member's raft state is written as a joined member's is, by
// node/formation.

// newRoles makes the node's roles.Poller. It runs under loopCtx from New
// on; it is made first, as New already asks it whether the certificate
// expired.
func (n *Node) newRoles() *roles.Poller {
	d := roleDaemon{n}
	return roles.New(roles.Config{
		NodeDir:           n.cfg.nodeDir(),
		ManagersFile:      n.cfg.managersPath(),
		OperatorTokenFile: n.cfg.dir().OperatorToken(),
		NodeName:          n.cfg.NodeName,
		DataDir:           n.cfg.DataDir,
		Interval:          n.cfg.RoleCheckInterval,
		NoAddressLoop:     n.cfg.Bootstrap, // ordinal formation's join reconciler (node/formation) moves it
		Daemon:            d,
		Files:             d,
		Conns:             n.managerConns,
		Logger:            n.log,
	})
}

// ErrCertExpired: this node's certificate expired; the error's text says
// what to run. The reason word is reason.CertificateExpired.
var ErrCertExpired = roles.ErrCertExpired

type roleDaemon struct{ n *Node }

var (
	_ roles.Daemon = roleDaemon{}
	_ roles.Files  = roleDaemon{}
)

func (d roleDaemon) State() api.NodeState  { return d.n.State() }
func (d roleDaemon) AdvertiseAddr() string { return d.n.advertise }

func (d roleDaemon) Manager() roles.Manager {
	if m := d.n.Manager(); m != nil {
		return m
	}
	return nil // not a nil *manager.Manager in a non-nil interface
}

func (d roleDaemon) AgentManagers() []string {
	if a := d.n.agent.Load(); a != nil {
		return a.Managers()
	}
	return nil
}

func (d roleDaemon) LockInit() (func(), error) { return d.n.lockInit() }
func (d roleDaemon) StartManager() error       { return d.n.startManager() }

// StopManager stops a demoted node's manager, which the leader already
// took out of raft, and drops its raft state. The manager is unset
// first: startManager's watcher then knows the stop is on purpose.
func (d roleDaemon) StopManager() error {
	n := d.n
	if m := n.mgr.Swap(nil); m != nil {
		if err := m.Stop(); err != nil && !errors.Is(err, manager.ErrRemoved) {
			n.log.Warn("demotion: manager stopped with an error", "err", err)
		}
	}
	if err := os.RemoveAll(n.cfg.raftDir()); err != nil {
		return fmt.Errorf("remove raft state: %w", err)
	}
	if err := os.Remove(n.cfg.dekPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove raft key: %w", err)
	}
	return nil
}

func (d roleDaemon) LoadNodeFiles() (caPEM, certPEM, keyPEM []byte, err error) {
	return d.n.keys.LoadNodeFiles()
}

func (d roleDaemon) InstallNodeFiles(caPEM, certPEM, keyPEM []byte) error {
	if err := d.n.keys.SaveNodeFiles(caPEM, certPEM, keyPEM); err != nil {
		return err
	}
	return d.n.reloadTLS()
}

func (d roleDaemon) ForgetUnlockKey() { d.n.keys.ForgetUnlockKey() }

func (d roleDaemon) WriteRaftState(clusterID, nodeID string, raftID uint64, members []*api.RaftMember) error {
	return d.n.formation.WriteJoinedState(clusterID, nodeID, raftID, members)
}

func (d roleDaemon) SaveOperatorToken(token string) error {
	return d.n.formation.SaveOperatorToken(token)
}
