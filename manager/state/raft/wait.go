package raft

import "sync"

// waitRegistry matches outcomes to the callers waiting for them by id:
// applied entries to their proposers (T error), answered read index
// requests to their reads (T the index). A caller registers before it
// asks, so no outcome can be missed.
type waitRegistry[T any] struct {
	mu sync.Mutex
	m  map[uint64]chan T
}

func newWaitRegistry[T any]() *waitRegistry[T] {
	return &waitRegistry[T]{m: make(map[uint64]chan T)}
}

// register returns the channel that will carry id's outcome.
func (w *waitRegistry[T]) register(id uint64) <-chan T {
	ch := make(chan T, 1)
	w.mu.Lock()
	w.m[id] = ch
	w.mu.Unlock()
	return ch
}

// trigger delivers v to id's caller, if one is waiting here (a second
// outcome for the same id finds nobody and is dropped).
func (w *waitRegistry[T]) trigger(id uint64, v T) {
	w.mu.Lock()
	ch, ok := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	if ok {
		ch <- v
	}
}

// cancel forgets id without an outcome.
func (w *waitRegistry[T]) cancel(id uint64) {
	w.mu.Lock()
	delete(w.m, id)
	w.mu.Unlock()
}

// cancelAll gives every waiting caller v.
func (w *waitRegistry[T]) cancelAll(v T) {
	w.mu.Lock()
	m := w.m
	w.m = make(map[uint64]chan T)
	w.mu.Unlock()
	for _, ch := range m {
		ch <- v
	}
}
