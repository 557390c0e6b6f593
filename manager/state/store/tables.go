package store

import (
	"encoding/binary"
	"fmt"

	"github.com/hashicorp/go-memdb"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/jaco-project/jaco/api"
)

// Object is a stored object: *api.Cluster, *api.Node, *api.Service,
// *api.Task, *api.JoinToken, *api.Network, *api.Secret or *api.Config.
type Object interface {
	proto.Message
	GetId() string
	GetMeta() *api.Meta
}

// Table names are the StoreAction target fields; index names are what
// ReadTx queries by.
const (
	tableCluster   = "cluster"
	tableNode      = "node"
	tableService   = "service"
	tableTask      = "task"
	tableJoinToken = "join_token"
	tableNetwork   = "network"
	tableSecret    = "secret"
	tableConfig    = "config"

	indexID        = "id"
	indexHostname  = "hostname"
	indexRaftID    = "raft_id"
	indexName      = "name"
	indexServiceID = "service_id"
	indexNodeID    = "node_id"
)

// tables maps each stored message type to its memdb table schema. Every
// table has the unique "id" index; empty secondary values are not indexed.
var tables = map[protoreflect.FullName]*memdb.TableSchema{
	fullName[*api.Cluster]():   newTable(tableCluster),
	fullName[*api.JoinToken](): newTable(tableJoinToken),
	fullName[*api.Node](): newTable(tableNode,
		newIndex(indexHostname, true, stringIndex[*api.Node]((*api.Node).GetHostname)),
		newIndex(indexRaftID, false, uintIndex[*api.Node]((*api.Node).GetRaftId))),
	fullName[*api.Service](): newTable(tableService,
		newIndex(indexName, true, stringIndex[*api.Service](func(s *api.Service) string { return s.GetSpec().GetName() }))),
	fullName[*api.Network](): newTable(tableNetwork,
		newIndex(indexName, true, stringIndex[*api.Network](func(n *api.Network) string { return n.GetSpec().GetName() }))),
	fullName[*api.Secret](): newTable(tableSecret,
		newIndex(indexName, true, stringIndex[*api.Secret](func(s *api.Secret) string { return s.GetSpec().GetName() }))),
	fullName[*api.Config](): newTable(tableConfig,
		newIndex(indexName, true, stringIndex[*api.Config](func(c *api.Config) string { return c.GetSpec().GetName() }))),
	fullName[*api.Task](): newTable(tableTask,
		newIndex(indexServiceID, false, stringIndex[*api.Task]((*api.Task).GetServiceId)),
		newIndex(indexNodeID, false, stringIndex[*api.Task]((*api.Task).GetNodeId))),
}

func fullName[T proto.Message]() protoreflect.FullName {
	var zero T
	return zero.ProtoReflect().Descriptor().FullName()
}

func newTable(name string, secondary ...*memdb.IndexSchema) *memdb.TableSchema {
	t := &memdb.TableSchema{Name: name, Indexes: map[string]*memdb.IndexSchema{
		indexID: {Name: indexID, Unique: true, Indexer: stringIndex[Object](Object.GetId)},
	}}
	for _, ix := range secondary {
		t.Indexes[ix.Name] = ix
	}
	return t
}

func newIndex(name string, unique bool, indexer memdb.Indexer) *memdb.IndexSchema {
	return &memdb.IndexSchema{Name: name, Unique: unique, AllowMissing: true, Indexer: indexer}
}

func schema() *memdb.DBSchema {
	s := &memdb.DBSchema{Tables: map[string]*memdb.TableSchema{}}
	for _, t := range tables {
		s.Tables[t.Name] = t
	}
	return s
}

// tableOf returns the table that keeps obj's type.
func tableOf(obj Object) (*memdb.TableSchema, error) {
	t, ok := tables[obj.ProtoReflect().Descriptor().FullName()]
	if !ok {
		return nil, fmt.Errorf("%T is not stored: %w", obj, ErrInvalid)
	}
	return t, nil
}

// valuer gives the query argument an indexer derives from an object, so a
// write can look for another object holding the same unique value.
type valuer interface {
	value(obj any) any
}

// stringIndex indexes a string field, NUL-terminated so a lookup of "a"
// never matches "ab". The empty string is not indexed.
type stringIndex[T any] func(T) string

func (f stringIndex[T]) value(obj any) any { return f(obj.(T)) }

func (f stringIndex[T]) FromObject(obj any) (bool, []byte, error) {
	v := f(obj.(T))
	return v != "", append([]byte(v), 0), nil
}

func (f stringIndex[T]) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("want one argument, got %d", len(args))
	}
	v, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("want a string, got %T", args[0])
	}
	return append([]byte(v), 0), nil
}

// uintIndex indexes a uint64 field, big-endian so the order is numeric.
// Zero is not indexed.
type uintIndex[T any] func(T) uint64

func (f uintIndex[T]) value(obj any) any { return f(obj.(T)) }

func (f uintIndex[T]) FromObject(obj any) (bool, []byte, error) {
	v := f(obj.(T))
	return v != 0, binary.BigEndian.AppendUint64(nil, v), nil
}

func (f uintIndex[T]) FromArgs(args ...any) ([]byte, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("want one argument, got %d", len(args))
	}
	v, ok := args[0].(uint64)
	if !ok {
		return nil, fmt.Errorf("want a uint64, got %T", args[0])
	}
	return binary.BigEndian.AppendUint64(nil, v), nil
}

// target returns the object an action is about, nil when it has none.
func target(a *api.StoreAction) Object {
	switch t := a.GetTarget().(type) {
	case *api.StoreAction_Cluster:
		return t.Cluster
	case *api.StoreAction_Node:
		return t.Node
	case *api.StoreAction_Service:
		return t.Service
	case *api.StoreAction_Task:
		return t.Task
	case *api.StoreAction_JoinToken:
		return t.JoinToken
	case *api.StoreAction_Network:
		return t.Network
	case *api.StoreAction_Secret:
		return t.Secret
	case *api.StoreAction_Config:
		return t.Config
	}
	return nil
}

// newAction wraps obj in a StoreAction of the given kind.
func newAction(kind api.StoreAction_Kind, obj Object) (*api.StoreAction, error) {
	a := &api.StoreAction{Kind: kind}
	switch o := obj.(type) {
	case *api.Cluster:
		a.Target = &api.StoreAction_Cluster{Cluster: o}
	case *api.Node:
		a.Target = &api.StoreAction_Node{Node: o}
	case *api.Service:
		a.Target = &api.StoreAction_Service{Service: o}
	case *api.Task:
		a.Target = &api.StoreAction_Task{Task: o}
	case *api.JoinToken:
		a.Target = &api.StoreAction_JoinToken{JoinToken: o}
	case *api.Network:
		a.Target = &api.StoreAction_Network{Network: o}
	case *api.Secret:
		a.Target = &api.StoreAction_Secret{Secret: o}
	case *api.Config:
		a.Target = &api.StoreAction_Config{Config: o}
	default:
		return nil, fmt.Errorf("%T is not stored: %w", obj, ErrInvalid)
	}
	return a, nil
}
