package agent

import "github.com/jaco-project/jaco/api"

// CompleteParts joins the parts of a COMPLETE set the dispatcher sent in
// several messages (each but the last with more set), so the worker drops
// what the set lacks only once it has the whole set: applied part by part,
// each part would remove the replicas of the others. One per assignments
// stream: a set cut short by the stream's end goes with it, and the next
// stream starts with a whole set again.
type CompleteParts struct {
	set *api.AssignmentsMessage
}

// Add takes the next message of the stream and returns the message to
// apply: m itself, a whole COMPLETE set once its last part came, or nil
// while a set is still coming.
func (c *CompleteParts) Add(m *api.AssignmentsMessage) *api.AssignmentsMessage {
	if m.GetType() != api.AssignmentsMessage_TYPE_COMPLETE {
		return m
	}
	if c.set == nil {
		if !m.GetMore() {
			return m
		}
		c.set = &api.AssignmentsMessage{Type: api.AssignmentsMessage_TYPE_COMPLETE}
	}
	c.set.Updated = append(c.set.Updated, m.GetUpdated()...)
	c.set.Removed = append(c.set.Removed, m.GetRemoved()...)
	c.set.Secrets = append(c.set.Secrets, m.GetSecrets()...)
	c.set.Configs = append(c.set.Configs, m.GetConfigs()...)
	if m.GetMore() {
		return nil
	}
	whole := c.set
	c.set = nil
	return whole
}
