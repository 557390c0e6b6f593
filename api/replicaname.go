package api

import "strconv"

// ReplicaName is how people are shown a replica, by the CLI, the
// dashboard and the events alike: SERVICE.SLOT for a replica of a
// replicated service, SERVICE.NODE for one of a global service (slot 0),
// node being the caller's name for the task's node (its hostname, or its
// id where hostnames are not at hand).
func ReplicaName(t *Task, node string) string {
	if t.GetSlot() != 0 {
		return t.GetServiceName() + "." + strconv.FormatUint(t.GetSlot(), 10)
	}
	return t.GetServiceName() + "." + node
}
