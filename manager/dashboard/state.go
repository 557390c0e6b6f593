package dashboard

import (
	"cmp"
	"slices"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/manager/state/store"
)

// State is what /api/state answers: the cluster as the serving manager's
// store holds it, read in one view. Enum values are words (api/enumword),
// as the CLI prints them.
type State struct {
	ClusterID string `json:"cluster_id"`
	// ServedBy is the hostname of the manager answering.
	ServedBy string    `json:"served_by"`
	Raft     Raft      `json:"raft"`
	Nodes    []Node    `json:"nodes"`
	Services []Service `json:"services"`
	Pending  []Pending `json:"pending"`
	Updates  []Update  `json:"updates"`
}

// Raft is the raft health as the serving manager sees it.
type Raft struct {
	LeaderKnown bool `json:"leader_known"`
	// Leader is the leader's hostname ("" when none is known).
	Leader     string `json:"leader"`
	QuorumLost bool   `json:"quorum_lost"`
	Term       uint64 `json:"term"`
	Commit     uint64 `json:"commit"`
	Applied    uint64 `json:"applied"`
	Members    int    `json:"members"`
	Voters     int    `json:"voters"`
}

// Node is one node of the cluster.
type Node struct {
	ID           string `json:"id"`
	Hostname     string `json:"hostname"`
	Address      string `json:"address"`
	Role         string `json:"role"`
	Availability string `json:"availability"`
	Status       string `json:"status"`
	Message      string `json:"message,omitempty"`
	// Drain is the drain state word, "" when none.
	Drain string `json:"drain,omitempty"`
	// Manager is set for a raft member.
	Manager *Member `json:"manager,omitempty"`
}

// Member is a node's place in the raft group.
type Member struct {
	Leader bool `json:"leader"`
	// Suffrage: voter or nonvoter. Reachability: ready or unreachable;
	// unknown where this manager cannot tell (only the leader can).
	Suffrage     string `json:"suffrage"`
	Reachability string `json:"reachability"`
}

// Service is one service and where its replicas are.
type Service struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Mode    string `json:"mode"`
	Wanted  int    `json:"wanted"`
	Running int    `json:"running"`
	// Nodes lists, per node, how many replicas are in which state.
	Nodes []Placement `json:"nodes"`
	// Update is the state word of the latest update or rollback, "" when
	// the service was never updated.
	Update        string `json:"update,omitempty"`
	UpdateMessage string `json:"update_message,omitempty"`
}

// Placement counts a service's replicas on one node by state.
type Placement struct {
	// Node is the hostname; "" for replicas not placed yet.
	Node   string       `json:"node"`
	States []StateCount `json:"states"`
}

// StateCount is how many replicas are in one state.
type StateCount struct {
	State string `json:"state"`
	Count int    `json:"count"`
}

// Pending is a replica waiting for a node.
type Pending struct {
	Service string `json:"service"`
	Replica string `json:"replica"`
	// Reason is the scheduler's word (no_suitable_node,
	// waiting_on_dependency; "" before it looked).
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Update is a service update or rollback in progress (or paused).
type Update struct {
	Service string `json:"service"`
	State   string `json:"state"`
	Message string `json:"message"`
}

// inProgress: the update states that still need the operator or the
// orchestrator; completed ones are history.
var inProgress = map[api.UpdateState]bool{
	api.UpdateState_UPDATE_STATE_UPDATING:         true,
	api.UpdateState_UPDATE_STATE_PAUSED:           true,
	api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED: true,
	api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED:  true,
}

// ReadState reads src's store in one view, and its raft status.
func ReadState(src Source) State {
	members, leaderID := src.Members()
	commit, applied := src.RaftIndexes()
	st := State{
		ClusterID: src.ClusterID(),
		Raft: Raft{LeaderKnown: leaderID != "", QuorumLost: src.QuorumLost(), Term: src.RaftTerm(),
			Commit: commit, Applied: applied, Members: len(members)},
		Nodes: []Node{}, Services: []Service{}, Pending: []Pending{}, Updates: []Update{},
	}
	byNodeID := map[string]*api.Member{}
	for _, m := range members {
		byNodeID[m.NodeId] = m
		if m.Suffrage == api.Suffrage_SUFFRAGE_VOTER {
			st.Raft.Voters++
		}
	}
	src.View(func(tx store.ReadTx) {
		hostnames := map[string]string{}
		for _, n := range tx.ListNodes() {
			hostnames[n.Id] = n.Hostname
			st.Nodes = append(st.Nodes, nodeOf(n, byNodeID[n.Id]))
		}
		st.ServedBy = hostnames[src.NodeID()]
		st.Raft.Leader = hostnames[leaderID]
		for _, s := range tx.ListServices() {
			st.Services = append(st.Services, serviceOf(tx, s, hostnames, &st.Pending))
			if us := s.GetUpdateStatus(); inProgress[us.GetState()] {
				st.Updates = append(st.Updates, Update{Service: s.GetSpec().GetName(),
					State: enumword.Of(us.GetState()), Message: us.GetMessage()})
			}
		}
	})
	slices.SortFunc(st.Nodes, func(a, b Node) int { return cmp.Compare(a.Hostname, b.Hostname) })
	slices.SortFunc(st.Services, func(a, b Service) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(st.Pending, func(a, b Pending) int { return cmp.Compare(a.Replica, b.Replica) })
	slices.SortFunc(st.Updates, func(a, b Update) int { return cmp.Compare(a.Service, b.Service) })
	return st
}

func nodeOf(n *api.Node, m *api.Member) Node {
	out := Node{ID: n.Id, Hostname: n.Hostname, Address: n.Address, Role: enumword.Of(n.GetRole()),
		Availability: enumword.Of(n.GetAvailability()), Status: enumword.Of(n.GetStatus().GetState()),
		Message: n.GetStatus().GetMessage()}
	if d := n.GetDrain().GetState(); d != api.DrainState_DRAIN_STATE_NONE {
		out.Drain = enumword.Of(d)
	}
	if m != nil {
		out.Manager = &Member{Leader: m.Leader, Suffrage: enumword.Of(m.Suffrage), Reachability: "unknown"}
		if m.Status != api.MemberStatus_MEMBER_STATUS_UNSPECIFIED {
			out.Manager.Reachability = enumword.Of(m.Status)
		}
	}
	return out
}

// serviceOf counts s's current replicas by node and state, and appends
// its pending ones to pending. Current: those meant to run, and those
// still running on their way out; finished ones are history.
func serviceOf(tx store.ReadTx, s *api.Service, hostnames map[string]string, pending *[]Pending) Service {
	out := Service{ID: s.Id, Name: s.GetSpec().GetName(), Mode: enumword.Of(s.GetSpec().GetMode()), Nodes: []Placement{}}
	if us := s.GetUpdateStatus(); us.GetState() != api.UpdateState_UPDATE_STATE_UNSPECIFIED {
		out.Update, out.UpdateMessage = enumword.Of(us.GetState()), us.GetMessage()
	}
	counts := map[string]map[string]int{} // hostname → state word → replicas
	desired := 0
	tx.EachTask(s.Id, "", func(t *api.Task) bool {
		state := t.GetStatus().GetState()
		wanted := t.GetDesiredState() == api.TaskState_TASK_STATE_RUNNING
		if !wanted && state >= api.TaskState_TASK_STATE_COMPLETE {
			return true
		}
		if wanted {
			desired++
			if state == api.TaskState_TASK_STATE_RUNNING {
				out.Running++
			}
		}
		host := cmp.Or(hostnames[t.GetNodeId()], t.GetNodeId()) // the id: a node removed under its replica
		if state == api.TaskState_TASK_STATE_PENDING {
			*pending = append(*pending, Pending{Service: out.Name, Replica: api.ReplicaName(t, host),
				Reason: t.GetStatus().GetReason(), Message: t.GetStatus().GetMessage()})
		}
		if counts[host] == nil {
			counts[host] = map[string]int{}
		}
		counts[host][enumword.Of(state)]++
		return true
	})
	out.Wanted = desired
	if s.GetSpec().GetMode() == api.ServiceMode_SERVICE_MODE_REPLICATED {
		out.Wanted = int(s.GetSpec().GetReplicas())
	}
	for host, states := range counts {
		p := Placement{Node: host}
		for state, n := range states {
			p.States = append(p.States, StateCount{State: state, Count: n})
		}
		slices.SortFunc(p.States, func(a, b StateCount) int { return cmp.Compare(a.State, b.State) })
		out.Nodes = append(out.Nodes, p)
	}
	slices.SortFunc(out.Nodes, func(a, b Placement) int { return cmp.Compare(a.Node, b.Node) })
	return out
}
