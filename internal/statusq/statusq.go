// Package statusq holds the task statuses a node has not had accepted by
// a dispatcher yet: the latest of each task, so a replica's changes
// coalesce and only its last status is sent.
package statusq

import (
	"slices"
	"strings"

	"github.com/jaco-project/jaco/api"
)

// Pending maps a task id to the status to send for it. It does no
// locking: its owner holds its own lock around every use.
type Pending map[string]*api.TaskStatus

// Batch returns what is pending as updates, ordered by task id.
func (p Pending) Batch() []*api.TaskStatusUpdate {
	updates := make([]*api.TaskStatusUpdate, 0, len(p))
	for id, st := range p {
		updates = append(updates, &api.TaskStatusUpdate{TaskId: id, Status: st})
	}
	slices.SortFunc(updates, func(a, b *api.TaskStatusUpdate) int { return strings.Compare(a.TaskId, b.TaskId) })
	return updates
}

// Accepted forgets the sent statuses that were not replaced since.
func (p Pending) Accepted(sent []*api.TaskStatusUpdate) {
	for _, u := range sent {
		if p[u.TaskId] == u.Status {
			delete(p, u.TaskId)
		}
	}
}
