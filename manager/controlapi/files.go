package controlapi

import (
	"context"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/identity"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/state/store"
)

// MaxFileBytes bounds a secret's or config's data: it travels in raft
// entries and, whole, in the assignments of every node running a replica
// that references it.
const MaxFileBytes = 500 << 10

// fileObject is what secrets and configs share: a name and data in a
// FileSpec.
type fileObject interface {
	store.Object
	GetSpec() *api.FileSpec
}

// fileKind holds what differs between secrets and configs, so the calls
// below are written once.
type fileKind[T fileObject] struct {
	word   string // "secret", "config"
	inUse  string // the reason word refusing a removal
	newObj func(id string, spec *api.FileSpec) T
	byID   func(tx store.ReadTx, id string) T
	byName func(tx store.ReadTx, name string) T
	refs   func(spec *api.ServiceSpec) []*api.FileReference
}

var secretKind = fileKind[*api.Secret]{
	word:  "secret",
	inUse: reason.SecretInUse,
	newObj: func(id string, spec *api.FileSpec) *api.Secret {
		return &api.Secret{Id: id, Meta: &api.Meta{}, Spec: spec}
	},
	byID:   store.ReadTx.GetSecret,
	byName: store.ReadTx.FindSecretByName,
	refs:   (*api.ServiceSpec).GetSecrets,
}

var configKind = fileKind[*api.Config]{
	word:  "config",
	inUse: reason.ConfigInUse,
	newObj: func(id string, spec *api.FileSpec) *api.Config {
		return &api.Config{Id: id, Meta: &api.Meta{}, Spec: spec}
	},
	byID:   store.ReadTx.GetConfig,
	byName: store.ReadTx.FindConfigByName,
	refs:   (*api.ServiceSpec).GetConfigs,
}

// create records a new object of spec, refused when its name is taken.
// It returns the stored object (data included: the caller strips it).
func (k fileKind[T]) create(ctx context.Context, s *Server, spec *api.FileSpec) (T, error) {
	var none T
	if err := k.check(spec); err != nil {
		return none, err
	}
	id, err := identity.NewID()
	if err != nil {
		return none, apierror.ToStatus(err)
	}
	obj := k.newObj(id, proto.CloneOf(spec))
	err = s.update(ctx, func(tx *store.Tx) error {
		if !isNil(k.byName(tx, spec.Name)) {
			return reason.Error(codes.AlreadyExists, reason.AlreadyExists, "a %s named %s exists already", k.word, spec.Name)
		}
		return tx.Create(obj)
	})
	if err != nil {
		return none, apierror.ToStatus(err)
	}
	var stored T
	s.store.View(func(tx store.ReadTx) { stored = k.byID(tx, id) })
	return stored, nil
}

// check refuses a spec create (or DeployStack) would not record: no
// spec, a bad name, data over MaxFileBytes.
func (k fileKind[T]) check(spec *api.FileSpec) error {
	if spec == nil {
		return invalid("no %s spec", k.word)
	}
	if err := checkName(k.word, spec.Name); err != nil {
		return err
	}
	// The size only: the data is never quoted, in errors or logs.
	if n := len(spec.Data); n > MaxFileBytes {
		return reason.Error(codes.ResourceExhausted, reason.LimitExceeded,
			"%s %s: the data is %d bytes; the limit is %d", k.word, spec.Name, n, MaxFileBytes)
	}
	return nil
}

// remove deletes the object idOrName names, refused while a service's
// spec or previous spec references it.
func (k fileKind[T]) remove(ctx context.Context, s *Server, idOrName string) error {
	err := s.update(ctx, func(tx *store.Tx) error {
		obj := k.find(tx, idOrName)
		if isNil(obj) {
			return notFound(k.word, idOrName)
		}
		if users := k.users(tx, obj.GetId(), true); len(users) > 0 {
			return reason.Error(codes.FailedPrecondition, k.inUse,
				"%s %s is used by services %s: remove them or update them off it first",
				k.word, obj.GetSpec().GetName(), strings.Join(users, ", "))
		}
		return tx.Delete(obj)
	})
	return apierror.ToStatus(err)
}

// find resolves an id, or else a name.
func (k fileKind[T]) find(tx store.ReadTx, idOrName string) T {
	if obj := k.byID(tx, idOrName); !isNil(obj) {
		return obj
	}
	return k.byName(tx, idOrName)
}

// users names the services whose spec (and, with previous, whose previous
// spec) references the object id, sorted.
func (k fileKind[T]) users(tx store.ReadTx, id string, previous bool) []string {
	refers := func(spec *api.ServiceSpec) bool {
		return slices.ContainsFunc(k.refs(spec), func(r *api.FileReference) bool { return r.GetId() == id })
	}
	var users []string
	for _, svc := range tx.ListServices() {
		if refers(svc.GetSpec()) || previous && svc.GetPreviousSpec() != nil && refers(svc.GetPreviousSpec()) {
			users = append(users, svc.GetSpec().GetName())
		}
	}
	slices.Sort(users)
	return users
}

// isNil reports a nil *api.Secret or *api.Config held in T.
func isNil[T fileObject](obj T) bool {
	return !obj.ProtoReflect().IsValid()
}

// withoutData is a copy of spec without its data.
func withoutData(spec *api.FileSpec) *api.FileSpec {
	out := proto.CloneOf(spec)
	if out != nil {
		out.Data = nil
	}
	return out
}
