package store

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/cowdb"
)

// Object is a stored object: *api.Cluster, *api.Node, *api.Service,
// *api.Task, *api.JoinToken, *api.Network, *api.Secret, *api.Config or
// *api.Volume.
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
	tableVolume    = "volume"

	indexID        = "id" // every table's order, not a secondary index
	indexHostname  = "hostname"
	indexRaftID    = "raft_id"
	indexName      = "name"
	indexServiceID = "service_id"
	indexNodeID    = "node_id"
	indexHash      = "hash"
	indexSpentAt   = "spent_at"
)

// table is a stored type's table: its name, the type it holds and its
// secondary indexes.
type table struct {
	name    string
	typ     cowdb.Type
	indexes []index
	// encoded: the table keeps its objects encoded (defineEncoded), so
	// a read returns a new object and a change to a written one is lost.
	encoded bool
	// snapshotList is the StoreSnapshot list of the table's objects.
	snapshotList protoreflect.FieldDescriptor
}

// index is a secondary index: a unique one refuses a second object with
// the same key (checkUnique, before any write).
type index struct {
	name string
	kind indexKind
	key  func(Object) (string, bool)
}

// indexKind is how an index holds its keys.
type indexKind uint8

const (
	// ordered: in key order, a key held by any number of objects.
	ordered indexKind = iota
	// unique: in key order, a key held by one object at most.
	unique
	// grouped: the objects of a key together, the keys in no order, for
	// keys many objects share, as a service's or a node's tasks do: read
	// by key only (cowdb.Index.Grouped).
	grouped
)

// tableNamed is each table by its name.
var tableNamed = func() map[string]*table {
	m := make(map[string]*table, len(tables))
	for _, t := range tables {
		m[t.name] = t
	}
	return m
}()

// tables maps each stored message type to its table. Every table is
// ordered by id; empty secondary values are not indexed.
var tables = byType(
	define[api.Cluster](tableCluster),
	// Tokens are written once or twice (issued, consumed) and read by
	// hash at a join: kept encoded, the collector need not walk them
	// (docs/adr/0055).
	defineEncoded[api.JoinToken](tableJoinToken,
		index{indexHash, ordered, stringKey(func(t *api.JoinToken) string { return string(t.GetHash()) })},
		index{indexSpentAt, ordered, func(o Object) (string, bool) { return spentKey(o.(*api.JoinToken)), true }}),
	define[api.Node](tableNode,
		index{indexHostname, unique, stringKey(func(n *api.Node) string { return n.GetHostname() })},
		index{indexRaftID, ordered, func(o Object) (string, bool) {
			v := o.(*api.Node).GetRaftId()
			return uintKey(v), v != 0
		}}),
	define[api.Service](tableService,
		index{indexName, unique, stringKey(func(s *api.Service) string { return s.GetSpec().GetName() })}),
	define[api.Network](tableNetwork,
		index{indexName, unique, stringKey(func(n *api.Network) string { return n.GetSpec().GetName() })}),
	define[api.Secret](tableSecret,
		index{indexName, unique, stringKey(func(s *api.Secret) string { return s.GetSpec().GetName() })}),
	define[api.Config](tableConfig,
		index{indexName, unique, stringKey(func(c *api.Config) string { return c.GetSpec().GetName() })}),
	define[api.Volume](tableVolume,
		index{indexName, unique, stringKey(func(v *api.Volume) string { return v.GetSpec().GetName() })}),
	define[api.Task](tableTask,
		index{indexServiceID, grouped, stringKey(func(t *api.Task) string { return t.GetServiceId() })},
		index{indexNodeID, grouped, stringKey(func(t *api.Task) string { return t.GetNodeId() })}),
)

// tableOrder is every table, in the order of their StoreSnapshot lists.
var tableOrder = func() []*table {
	order := slices.Collect(maps.Values(tables))
	slices.SortFunc(order, func(a, b *table) int { return cmp.Compare(a.snapshotList.Number(), b.snapshotList.Number()) })
	return order
}()

// typedTable is a table with the message it keeps.
type typedTable struct {
	message protoreflect.FullName
	*table
}

// define is the table called name that keeps *T, with indexes.
func define[T any, P interface {
	*T
	Object
}](name string, indexes ...index) typedTable {
	return typedTable{P(nil).ProtoReflect().Descriptor().FullName(), &table{name: name, typ: cowdb.TypeOf[T](), indexes: indexes}}
}

// defineEncoded is define's table keeping its objects encoded.
func defineEncoded[T any, P interface {
	*T
	Object
}](name string, indexes ...index) typedTable {
	d := define[T, P](name, indexes...)
	d.typ, d.encoded = cowdb.EncodedOf[T](protoCodec[T, P]()), true
	return d
}

// protoCodec encodes *T in its wire format.
func protoCodec[T any, P interface {
	*T
	Object
}]() cowdb.Codec {
	return cowdb.Codec{
		Size: func(obj any) int { return proto.Size(obj.(P)) },
		// The size Size just cached: nothing changes obj in between.
		Append: func(b []byte, obj any) ([]byte, error) {
			return proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b, obj.(P))
		},
		Decode: func(data []byte) (any, error) {
			obj := P(new(T))
			return obj, proto.Unmarshal(data, obj)
		},
	}
}

func byType(defs ...typedTable) map[protoreflect.FullName]*table {
	m := make(map[protoreflect.FullName]*table, len(defs))
	lists := (&api.StoreSnapshot{}).ProtoReflect().Descriptor().Fields()
	for _, d := range defs {
		for i := range lists.Len() {
			if fd := lists.Get(i); fd.Message() != nil && fd.Message().FullName() == d.message {
				d.snapshotList = fd
			}
		}
		if d.snapshotList == nil {
			panic(fmt.Sprintf("store: no StoreSnapshot list of %s", d.message))
		}
		m[d.message] = d.table
	}
	return m
}

// stringKey indexes a string field; the empty string is not indexed.
func stringKey[T Object](field func(T) string) func(Object) (string, bool) {
	return func(o Object) (string, bool) {
		v := field(o.(T))
		return v, v != ""
	}
}

// spentKey is when a token is spent, as a key: the earlier of its
// consumption and its expiry (an unset expiry is the epoch, as the sweep
// reads it).
func spentKey(jt *api.JoinToken) string {
	at := jt.GetExpiresAt()
	if c := jt.GetConsumedAt(); c != nil && (c.GetSeconds() < at.GetSeconds() || c.GetSeconds() == at.GetSeconds() && c.GetNanos() < at.GetNanos()) {
		at = c
	}
	return timeKey(at.GetSeconds(), at.GetNanos())
}

// timeKey is a time as a key ordered as times are: the seconds, sign bit
// flipped, then the nanoseconds, big-endian.
func timeKey(seconds int64, nanos int32) string {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 12), uint64(seconds)^1<<63)
	return string(binary.BigEndian.AppendUint32(b, uint32(nanos)))
}

// uintKey is the key of a uint64 index value.
func uintKey(v uint64) string {
	return string(binary.BigEndian.AppendUint64(nil, v))
}

// schema is the database schema of the tables.
var schema = func() *cowdb.Schema {
	s := &cowdb.Schema{ID: func(o any) string { return o.(Object).GetId() }}
	for _, t := range tables {
		ct := cowdb.Table{Name: t.name, Type: t.typ}
		for _, ix := range t.indexes {
			ct.Indexes = append(ct.Indexes, cowdb.Index{Name: ix.name, Key: func(o any) (string, bool) { return ix.key(o.(Object)) }, Grouped: ix.kind == grouped})
		}
		s.Tables = append(s.Tables, ct)
	}
	return s
}()

// tableOf returns the table that keeps obj's type.
func tableOf(obj Object) (*table, error) {
	t, ok := tables[obj.ProtoReflect().Descriptor().FullName()]
	if !ok {
		return nil, fmt.Errorf("%T is not stored: %w", obj, ErrInvalid)
	}
	return t, nil
}

// hasUniqueSecondary tells whether t has a unique index besides its id.
func (t *table) hasUniqueSecondary() bool {
	for _, ix := range t.indexes {
		if ix.kind == unique {
			return true
		}
	}
	return false
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
	case *api.StoreAction_Volume:
		return t.Volume
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
	case *api.Volume:
		a.Target = &api.StoreAction_Volume{Volume: o}
	default:
		return nil, fmt.Errorf("%T is not stored: %w", obj, ErrInvalid)
	}
	return a, nil
}
