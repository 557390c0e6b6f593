package raft

import "sync"

// waitRegistry matches applied entries to the proposers waiting for them.
// A proposer registers before proposing, so no outcome can be missed.
type waitRegistry struct {
	mu sync.Mutex
	m  map[uint64]chan error
}

func newWaitRegistry() *waitRegistry {
	return &waitRegistry{m: make(map[uint64]chan error)}
}

// register returns the channel that will carry id's outcome.
func (w *waitRegistry) register(id uint64) <-chan error {
	ch := make(chan error, 1)
	w.mu.Lock()
	w.m[id] = ch
	w.mu.Unlock()
	return ch
}

// trigger delivers err to id's proposer, if one is waiting here.
func (w *waitRegistry) trigger(id uint64, err error) {
	w.mu.Lock()
	ch, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		ch <- err
	}
}

// cancel forgets id without an outcome.
func (w *waitRegistry) cancel(id uint64) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

// cancelAll fails every waiting proposer with err.
func (w *waitRegistry) cancelAll(err error) {
	w.mu.Lock()
	m := w.m
	w.m = make(map[uint64]chan error)
	w.mu.Unlock()
	for _, ch := range m {
		ch <- err
	}
}
