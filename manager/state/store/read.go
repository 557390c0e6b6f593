package store

import (
	"iter"
	"time"

	"github.com/jaco-project/jaco/manager/state/cowdb"
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
	// ClusterShared is Cluster without the clone: the stored object
	// itself, which the caller must not change (see EachTask). It is for
	// a reader of one field on every call, such as the CA certificate a
	// join token is minted against.
	ClusterShared() *api.Cluster

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
	// FindJoinTokenByHash is the token whose hash is hash, nil when none.
	FindJoinTokenByHash(hash []byte) *api.JoinToken

	GetNetwork(id string) *api.Network
	FindNetworkByName(name string) *api.Network
	ListNetworks() []*api.Network

	// Secrets and configs come whole, data included: the API edge strips
	// what it must not return.
	GetSecret(id string) *api.Secret
	FindSecretByName(name string) *api.Secret
	ListSecrets() []*api.Secret

	GetConfig(id string) *api.Config
	FindConfigByName(name string) *api.Config
	ListConfigs() []*api.Config

	GetVolume(id string) *api.Volume
	FindVolumeByName(name string) *api.Volume
	ListVolumes() []*api.Volume
	// ScanVolumes is ScanNodes for volumes.
	ScanVolumes(after string, fn func(*api.Volume) bool)

	// ScanNodes, ScanServices and ScanTasks call fn with a clone of each
	// object whose id sorts after after ("" for the first), in id order,
	// until fn returns false: a page of a listing clones what it sends,
	// not the rest of the table.
	ScanNodes(after string, fn func(*api.Node) bool)
	ScanServices(after string, fn func(*api.Service) bool)
	// ScanTasks visits only serviceID's tasks when it is set, and only
	// nodeID's when that is set.
	ScanTasks(after, serviceID, nodeID string, fn func(*api.Task) bool)

	// EachTask calls fn with the stored tasks themselves, not clones, in
	// id order (serviceID's only when set, else nodeID's only when set,
	// else all) until fn returns false. fn must not change a task; it may
	// keep one to read, as the store never changes a stored object (a write
	// stores a new one). It is for readers of many tasks that change none,
	// where cloning them would be most of the work.
	EachTask(serviceID, nodeID string, fn func(*api.Task) bool)
	// EachNode is EachTask for nodes: the stored nodes themselves, in id
	// order, until fn returns false.
	EachNode(fn func(*api.Node) bool)
	// JoinTokensSpentBefore is up to max tokens spent (consumed or
	// expired, whichever came first) before t, the earliest first. It
	// reads only those, through an index of when each token is spent.
	JoinTokensSpentBefore(t time.Time, max int) []*api.JoinToken
	// ListTasksByServiceShallow is ListTasksByService with shallow copies
	// (api.Task.Shallow): the caller may set a task's fields, or replace
	// the messages it points to, but never change those messages, which
	// are the store's.
	ListTasksByServiceShallow(serviceID string) []*api.Task
}

// readTx implements ReadTx over a version of the database.
type readTx struct {
	txn *cowdb.Version
	// pending is set in a Tx: the actions it checked are written into
	// txn only when something reads after them (see pending).
	pending *pending
}

// view is the transaction to read, holding every action recorded so far.
func (r readTx) view() *cowdb.Version {
	if r.pending != nil {
		r.pending.write()
	}
	return r.txn
}

func (r readTx) GetCluster(id string) *api.Cluster {
	return first[*api.Cluster](r.view(), tableCluster, indexID, id)
}
func (r readTx) ListClusters() []*api.Cluster {
	return list[*api.Cluster](r.view(), tableCluster, indexID, "")
}
func (r readTx) Cluster() *api.Cluster {
	if c := r.ClusterShared(); c != nil {
		return proto.CloneOf(c)
	}
	return nil
}

func (r readTx) ClusterShared() *api.Cluster {
	if cs := listShared[*api.Cluster](r.view(), tableCluster, indexID, ""); len(cs) > 0 {
		return cs[0]
	}
	return nil
}

func (r readTx) GetNode(id string) *api.Node {
	return first[*api.Node](r.view(), tableNode, indexID, id)
}
func (r readTx) FindNodeByHostname(hostname string) *api.Node {
	return first[*api.Node](r.view(), tableNode, indexHostname, hostname)
}
func (r readTx) FindNodeByRaftID(raftID uint64) *api.Node {
	return first[*api.Node](r.view(), tableNode, indexRaftID, uintKey(raftID))
}
func (r readTx) ListNodes() []*api.Node {
	return list[*api.Node](r.view(), tableNode, indexID, "")
}

func (r readTx) GetService(id string) *api.Service {
	return first[*api.Service](r.view(), tableService, indexID, id)
}
func (r readTx) FindServiceByName(name string) *api.Service {
	return first[*api.Service](r.view(), tableService, indexName, name)
}
func (r readTx) ListServices() []*api.Service {
	return list[*api.Service](r.view(), tableService, indexID, "")
}

func (r readTx) GetTask(id string) *api.Task {
	return first[*api.Task](r.view(), tableTask, indexID, id)
}
func (r readTx) ListTasks() []*api.Task {
	return list[*api.Task](r.view(), tableTask, indexID, "")
}
func (r readTx) ListTasksByService(serviceID string) []*api.Task {
	return list[*api.Task](r.view(), tableTask, indexServiceID, serviceID)
}
func (r readTx) ListTasksByNode(nodeID string) []*api.Task {
	return list[*api.Task](r.view(), tableTask, indexNodeID, nodeID)
}

func (r readTx) GetJoinToken(id string) *api.JoinToken {
	return first[*api.JoinToken](r.view(), tableJoinToken, indexID, id)
}
func (r readTx) FindJoinTokenByHash(hash []byte) *api.JoinToken {
	if len(hash) == 0 {
		return nil
	}
	return first[*api.JoinToken](r.view(), tableJoinToken, indexHash, string(hash))
}
func (r readTx) ListJoinTokens() []*api.JoinToken {
	return list[*api.JoinToken](r.view(), tableJoinToken, indexID, "")
}

func (r readTx) GetNetwork(id string) *api.Network {
	return first[*api.Network](r.view(), tableNetwork, indexID, id)
}
func (r readTx) FindNetworkByName(name string) *api.Network {
	return first[*api.Network](r.view(), tableNetwork, indexName, name)
}
func (r readTx) ListNetworks() []*api.Network {
	return list[*api.Network](r.view(), tableNetwork, indexID, "")
}

func (r readTx) GetSecret(id string) *api.Secret {
	return first[*api.Secret](r.view(), tableSecret, indexID, id)
}
func (r readTx) FindSecretByName(name string) *api.Secret {
	return first[*api.Secret](r.view(), tableSecret, indexName, name)
}
func (r readTx) ListSecrets() []*api.Secret {
	return list[*api.Secret](r.view(), tableSecret, indexID, "")
}

func (r readTx) GetConfig(id string) *api.Config {
	return first[*api.Config](r.view(), tableConfig, indexID, id)
}
func (r readTx) FindConfigByName(name string) *api.Config {
	return first[*api.Config](r.view(), tableConfig, indexName, name)
}
func (r readTx) ListConfigs() []*api.Config {
	return list[*api.Config](r.view(), tableConfig, indexID, "")
}

func (r readTx) GetVolume(id string) *api.Volume {
	return first[*api.Volume](r.view(), tableVolume, indexID, id)
}
func (r readTx) FindVolumeByName(name string) *api.Volume {
	return first[*api.Volume](r.view(), tableVolume, indexName, name)
}
func (r readTx) ListVolumes() []*api.Volume {
	return list[*api.Volume](r.view(), tableVolume, indexID, "")
}
func (r readTx) ScanVolumes(after string, fn func(*api.Volume) bool) {
	scan(r.view(), tableVolume, indexID, "", after, nil, fn)
}

func (r readTx) EachTask(serviceID, nodeID string, fn func(*api.Task) bool) {
	switch {
	case serviceID != "":
		eachShared(r.view(), tableTask, indexServiceID, serviceID, fn)
	case nodeID != "":
		eachShared(r.view(), tableTask, indexNodeID, nodeID, fn)
	default:
		eachShared(r.view(), tableTask, indexID, "", fn)
	}
}

func (r readTx) EachNode(fn func(*api.Node) bool) {
	eachShared(r.view(), tableNode, indexID, "", fn)
}

func (r readTx) JoinTokensSpentBefore(t time.Time, max int) []*api.JoinToken {
	v, before := r.view(), timeKey(t.Unix(), int32(t.Nanosecond()))
	var ids []string
	v.EachKey(tableJoinToken, indexSpentAt, func(key, id string) bool {
		if key >= before || len(ids) == max {
			return false
		}
		ids = append(ids, id)
		return true
	})
	out := make([]*api.JoinToken, 0, len(ids))
	for _, id := range ids {
		out = append(out, first[*api.JoinToken](v, tableJoinToken, indexID, id))
	}
	return out
}

// AllTasks is tx.EachTask over every task as an iterator: the stored
// tasks themselves, which the caller must not change. A pass that reads
// every task to derive something else (blocks, endpoints) takes it instead
// of ListTasks, whose clones of 100 000 tasks cost a leader a second of
// CPU at each term's start.
func AllTasks(tx ReadTx) iter.Seq[*api.Task] {
	return func(yield func(*api.Task) bool) { tx.EachTask("", "", yield) }
}

func (r readTx) ListTasksByServiceShallow(serviceID string) []*api.Task {
	out := listShared[*api.Task](r.view(), tableTask, indexServiceID, serviceID)
	for i, t := range out {
		out[i] = t.Shallow()
	}
	return out
}

func (r readTx) ScanNodes(after string, fn func(*api.Node) bool) {
	scan(r.view(), tableNode, indexID, "", after, nil, fn)
}
func (r readTx) ScanServices(after string, fn func(*api.Service) bool) {
	scan(r.view(), tableService, indexID, "", after, nil, fn)
}
func (r readTx) ScanTasks(after, serviceID, nodeID string, fn func(*api.Task) bool) {
	onNode := func(t *api.Task) bool { return nodeID == "" || t.GetNodeId() == nodeID }
	switch {
	case serviceID != "":
		scan(r.view(), tableTask, indexServiceID, serviceID, after, onNode, fn)
	case nodeID != "":
		scan(r.view(), tableTask, indexNodeID, nodeID, after, nil, fn)
	default:
		scan(r.view(), tableTask, indexID, "", after, nil, fn)
	}
}

// scan calls fn with clones of the objects of table after the id after,
// in id order, that keep (when set) accepts, until fn returns false.
// With an index other than id it walks the objects whose key in it is
// key, which come in id order too.
func scan[T Object](v *cowdb.Version, table, index, key, after string, keep, fn func(T) bool) {
	each(v, table, index, key, after, func(raw any) bool {
		obj := raw.(T)
		if keep != nil && !keep(obj) {
			return true
		}
		return fn(owned(table, obj))
	})
}

// owned is obj, read from table, as its reader's to change: a clone of
// the stored object, or obj itself when the table keeps its objects
// encoded and the read decoded a new one.
func owned[T Object](table string, obj T) T {
	if tableNamed[table].encoded {
		return obj
	}
	return proto.Clone(obj).(T)
}

// each walks table in id order, all of it for the id index, else the
// objects whose key in index is key, from after the id after.
func each(v *cowdb.Version, table, index, key, after string, fn func(any) bool) {
	if index == indexID {
		v.All(table, after, fn)
		return
	}
	v.Each(table, index, key, after, fn)
}

// first returns a clone of the first object of table whose key in index
// is key (its id for the id index), or nil.
func first[T Object](v *cowdb.Version, table, index, key string) T {
	var raw any
	if index == indexID {
		raw = v.Get(table, key)
	} else {
		raw = v.First(table, index, key)
	}
	if raw == nil {
		var none T
		return none
	}
	return owned(table, raw.(T))
}

// list returns clones of the objects of table whose key in index is key,
// all of them for the id index.
func list[T Object](v *cowdb.Version, table, index, key string) []T {
	out := listShared[T](v, table, index, key)
	for i, o := range out {
		out[i] = owned(table, o)
	}
	return out
}

// listShared is list without the clones: the stored objects themselves,
// which nobody may change (a write stores a clone; see Tx), or, from an
// encoded table, objects decoded for this read. It is for readers that
// change nothing they read (the cluster object, shallow task lists),
// where cloning would double the work and the memory.
func listShared[T Object](v *cowdb.Version, table, index, key string) []T {
	var out []T
	eachShared(v, table, index, key, func(o T) bool {
		out = append(out, o)
		return true
	})
	return out
}

// eachShared calls fn with the stored objects whose key in index is key
// (all of them for the id index) until fn returns false; see listShared.
func eachShared[T Object](v *cowdb.Version, table, index, key string, fn func(T) bool) {
	each(v, table, index, key, "", func(raw any) bool { return fn(raw.(T)) })
}
