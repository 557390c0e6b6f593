package store

import (
	"fmt"

	"github.com/hashicorp/go-memdb"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// ReadTx is a consistent read view of the store. Every object it returns is
// a clone the caller may keep and change. Lists are ordered by id (by index
// value first for the By lookups). Get and Find return nil when nothing
// matches.
type ReadTx interface {
	GetCluster(id string) *api.Cluster
	ListClusters() []*api.Cluster
	// Cluster returns the cluster object (a store holds at most one),
	// nil before ClusterInit.
	Cluster() *api.Cluster

	GetNode(id string) *api.Node
	FindNodeByHostname(hostname string) *api.Node
	// FindNodeByRaftID returns the node whose raft_id is raftID (raft ids
	// are never reused); nodes with raft_id 0 are not found by it.
	FindNodeByRaftID(raftID uint64) *api.Node
	ListNodes() []*api.Node

	GetService(id string) *api.Service
	FindServiceByName(name string) *api.Service
	ListServices() []*api.Service

	GetTask(id string) *api.Task
	ListTasks() []*api.Task
	ListTasksByService(serviceID string) []*api.Task
	ListTasksByNode(nodeID string) []*api.Task

	GetJoinToken(id string) *api.JoinToken
	ListJoinTokens() []*api.JoinToken
}

// readTx implements ReadTx over a memdb transaction.
type readTx struct {
	txn *memdb.Txn
}

func (r readTx) GetCluster(id string) *api.Cluster {
	return first[*api.Cluster](r.txn, tableCluster, indexID, id)
}
func (r readTx) ListClusters() []*api.Cluster {
	return list[*api.Cluster](r.txn, tableCluster, indexID)
}
func (r readTx) Cluster() *api.Cluster {
	if cs := r.ListClusters(); len(cs) > 0 {
		return cs[0]
	}
	return nil
}

func (r readTx) GetNode(id string) *api.Node {
	return first[*api.Node](r.txn, tableNode, indexID, id)
}
func (r readTx) FindNodeByHostname(hostname string) *api.Node {
	return first[*api.Node](r.txn, tableNode, indexHostname, hostname)
}
func (r readTx) FindNodeByRaftID(raftID uint64) *api.Node {
	return first[*api.Node](r.txn, tableNode, indexRaftID, raftID)
}
func (r readTx) ListNodes() []*api.Node {
	return list[*api.Node](r.txn, tableNode, indexID)
}

func (r readTx) GetService(id string) *api.Service {
	return first[*api.Service](r.txn, tableService, indexID, id)
}
func (r readTx) FindServiceByName(name string) *api.Service {
	return first[*api.Service](r.txn, tableService, indexName, name)
}
func (r readTx) ListServices() []*api.Service {
	return list[*api.Service](r.txn, tableService, indexID)
}

func (r readTx) GetTask(id string) *api.Task {
	return first[*api.Task](r.txn, tableTask, indexID, id)
}
func (r readTx) ListTasks() []*api.Task {
	return list[*api.Task](r.txn, tableTask, indexID)
}
func (r readTx) ListTasksByService(serviceID string) []*api.Task {
	return list[*api.Task](r.txn, tableTask, indexServiceID, serviceID)
}
func (r readTx) ListTasksByNode(nodeID string) []*api.Task {
	return list[*api.Task](r.txn, tableTask, indexNodeID, nodeID)
}

func (r readTx) GetJoinToken(id string) *api.JoinToken {
	return first[*api.JoinToken](r.txn, tableJoinToken, indexID, id)
}
func (r readTx) ListJoinTokens() []*api.JoinToken {
	return list[*api.JoinToken](r.txn, tableJoinToken, indexID)
}

// first returns a clone of the first object of table matching arg on index,
// or nil. The queries are fixed by this file, so a memdb error is a bug here.
func first[T Object](txn *memdb.Txn, table, index string, arg any) T {
	raw, err := txn.First(table, index, arg)
	if err != nil {
		panic(fmt.Sprintf("store: query %s by %s: %v", table, index, err))
	}
	if raw == nil {
		var none T
		return none
	}
	return proto.Clone(raw.(T)).(T)
}

// list returns clones of the objects of table matching args on index, all of
// them when args is empty.
func list[T Object](txn *memdb.Txn, table, index string, args ...any) []T {
	it, err := txn.Get(table, index, args...)
	if err != nil {
		panic(fmt.Sprintf("store: query %s by %s: %v", table, index, err))
	}
	var out []T
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, proto.Clone(raw.(T)).(T))
	}
	return out
}
