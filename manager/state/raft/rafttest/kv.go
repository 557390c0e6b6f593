// Package rafttest holds what tests of raft members share: a minimal
// replicated state machine standing in for the store.
package rafttest

import (
	"errors"
	"sync"

	"github.com/jaco-project/jaco/api"
)

// Rejected is the value that makes KV refuse a batch, so tests can see a
// store's verdict travel back to the proposer.
const Rejected = "reject"

// KV is a key/value state machine: each action creates a Service whose id
// is the key and whose spec name is the value. Like the store, it holds
// what it applies from its readers until Publish, so a test reading it
// after a proposal returns checks that the member published first.
type KV struct {
	mu sync.Mutex
	kv map[string]string
	// held are the writes applied since the last Publish, in order.
	held [][2]string
}

// NewKV returns an empty KV.
func NewKV() *KV { return &KV{kv: map[string]string{}} }

// Put is the batch that sets k to v.
func Put(k, v string) []*api.StoreAction {
	return []*api.StoreAction{{
		Kind:   api.StoreAction_KIND_CREATE,
		Target: &api.StoreAction_Service{Service: &api.Service{Id: k, Spec: &api.ServiceSpec{Name: v}}},
	}}
}

// ApplyHeld applies a batch whole, or refuses it whole; readers see it at
// Publish.
func (a *KV) ApplyHeld(_ uint64, req *api.InternalRaftRequest) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, act := range req.Actions {
		s := act.GetService()
		if s == nil {
			return errors.New("rafttest: not a service")
		}
		if s.Spec.Name == Rejected {
			return errors.New("rafttest: rejected by the store")
		}
	}
	for _, act := range req.Actions {
		a.held = append(a.held, [2]string{act.GetService().Id, act.GetService().Spec.Name})
	}
	return nil
}

// Publish makes the held writes visible.
func (a *KV) Publish() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.held {
		a.kv[w[0]] = w[1]
	}
	a.held = nil
}

// Save dumps the state.
func (a *KV) Save() *api.StoreSnapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	snap := &api.StoreSnapshot{}
	for k, v := range a.kv {
		snap.Services = append(snap.Services, &api.Service{Id: k, Spec: &api.ServiceSpec{Name: v}})
	}
	return snap
}

// Freeze dumps the state now, for the raft node to encode later.
func (a *KV) Freeze() func() api.FrozenStore {
	snap := a.Save()
	return func() api.FrozenStore { return api.FrozenStore{Objects: snap} }
}

// Restore replaces the state with a snapshot's.
func (a *KV) Restore(snap *api.StoreSnapshot, _ uint64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.kv, a.held = map[string]string{}, nil
	for _, s := range snap.Services {
		a.kv[s.GetId()] = s.GetSpec().GetName()
	}
	return nil
}

// Get returns k's value.
func (a *KV) Get(k string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.kv[k]
	return v, ok
}

// Len is the number of keys.
func (a *KV) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.kv)
}
