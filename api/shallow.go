package api

// Shallow returns a copy of t whose own fields may be set freely, while
// the messages it points to (meta, status, spec, timestamps) are t's. It
// lets a reader of many stored tasks that changes few of them (the
// orchestrator) skip a deep copy of every task's spec: it sets a field, or
// replaces a message, of its copy, and never changes a message in place.
// A new Task field must be added here; TestShallowCopiesEveryField fails
// until it is.
func (t *Task) Shallow() *Task {
	if t == nil {
		return nil
	}
	return &Task{
		Id:           t.Id,
		Meta:         t.Meta,
		ServiceId:    t.ServiceId,
		Slot:         t.Slot,
		NodeId:       t.NodeId,
		DesiredState: t.DesiredState,
		Status:       t.Status,
		Spec:         t.Spec,
		SpecVersion:  t.SpecVersion,
		ServiceName:  t.ServiceName,
		NotBefore:    t.NotBefore,
		Replaces:     t.Replaces,
		RunningSince: t.RunningSince,
		Unstable:     t.Unstable,
		Rebalance:    t.Rebalance,
		JobIteration: t.JobIteration,
		Volumes:      t.Volumes,
	}
}
