// Package backuptest holds the backup the tests of package backup and its
// subpackages take, restore and stream.
package backuptest

import (
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
)

// Backup is a small cluster: one manager (node-a, raft id 5, hostname
// mgr-1, zone a), one worker, one service, and raft id 3 removed.
func Backup(t testing.TB) *backupfile.Backup {
	t.Helper()
	caCert, caKey, err := ca.NewRootCA("cluster-1")
	if err != nil {
		t.Fatal(err)
	}
	meta := func(v uint64) *api.Meta { return &api.Meta{Version: v} }
	return &backupfile.Backup{
		ClusterID: "cluster-1", Index: 42, Term: 7, TakenAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Snapshot: &api.RaftSnapshot{
			Store: &api.StoreSnapshot{
				Clusters: []*api.Cluster{{Id: "cluster-1", Meta: meta(1), CaCertPem: caCert, CaKeyPem: caKey, OperatorTokenHash: []byte("hash")}},
				Nodes: []*api.Node{
					{Id: "node-a", Meta: meta(2), Hostname: "mgr-1", Address: "10.0.0.1:4242", Role: api.NodeRole_NODE_ROLE_MANAGER, RaftId: 5, Labels: map[string]string{"zone": "a"}},
					{Id: "node-b", Meta: meta(9), Hostname: "worker-1", Address: "10.0.0.2:4242", Role: api.NodeRole_NODE_ROLE_WORKER},
				},
				Services: []*api.Service{{Id: "svc-1", Meta: meta(30), Spec: &api.ServiceSpec{Name: "web"}, SpecVersion: 3}},
			},
			Members:        []*api.RaftMember{{RaftId: 5, NodeId: "node-a", Address: "10.0.0.1:4242"}},
			RemovedMembers: []*api.RaftMember{{RaftId: 3, NodeId: "node-old"}},
		},
	}
}
