package node

import (
	"context"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/node/formation"
)

// Init, join, rejoin, ordinal and static formation and
// --force-new-cluster are package formation's (docs/design.md §4). This
// file is the daemon as that package sees it: formationDaemon implements
// formation.Daemon and formation.Parts over the node's fields; the
// keyring serves as its Keys and the role loop as its Expiry.

// newFormation makes the node's formation.Former. It is made right after
// the role loop, whose certificate expiry it reads, and before anything
// else: New may have to force a new cluster first.
func (n *Node) newFormation() *formation.Former {
	d := formationDaemon{n}
	return formation.New(formation.Config{
		Dir:          n.cfg.dir(),
		NodeName:     n.cfg.NodeName,
		CertLifetime: n.cfg.CertLifetime,
		Settings:     n.cfg.formation,
		Daemon:       d,
		Parts:        d,
		Keys:         n.keys,
		Expiry:       n.roles,
		Logger:       n.log,
	})
}

type formationDaemon struct{ n *Node }

var (
	_ formation.Daemon = formationDaemon{}
	_ formation.Parts  = formationDaemon{}
)

func (d formationDaemon) State() api.NodeState  { return d.n.State() }
func (d formationDaemon) AdvertiseAddr() string { return d.n.advertise }

func (d formationDaemon) ClusterID() string {
	id, _ := d.n.clusterID.Load().(string)
	return id
}

func (d formationDaemon) LockInit() (func(), error) { return d.n.lockInit() }

func (d formationDaemon) Manager() formation.Manager {
	if m := d.n.Manager(); m != nil {
		return m
	}
	return nil // not a nil *manager.Manager in a non-nil interface
}

func (d formationDaemon) NoManager() error { return d.n.noManager() }

func (d formationDaemon) Fail(err error) {
	select {
	case d.n.fatal <- err:
	default: // the daemon is stopping for another reason already
	}
}

func (d formationDaemon) StartManager() error { return d.n.startManager() }

func (d formationDaemon) WorkerReady() {
	d.n.state.Store(int32(api.NodeState_NODE_STATE_READY))
}

func (d formationDaemon) ReloadTLS() error   { return d.n.reloadTLS() }
func (d formationDaemon) StartAgent() error  { return d.n.startAgent() }
func (d formationDaemon) CloseManagerConns() { d.n.managerConns.CloseAll() }

// formationService serves FormationService through the node's Former.
type formationService struct {
	api.UnimplementedFormationServiceServer
	f *formation.Former
}

func (s formationService) SecretJoin(ctx context.Context, req *api.SecretJoinRequest) (*api.SecretJoinResponse, error) {
	return s.f.SecretJoin(ctx, req)
}
