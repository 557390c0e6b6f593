package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/client"
)

// serviceView is the JSON shape of one service in `jaco service ls`.
type serviceView struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Mode    string `json:"mode"`
	Desired uint64 `json:"desired"`
	Running uint64 `json:"running"`
	Runs    string `json:"runs"`
	// Ports are the published ports (portsText): "*:8080->80/tcp"
	// through the routing mesh, "8080->80/tcp (host)" on the replica's
	// node.
	Ports       string `json:"ports"`
	SpecVersion uint64 `json:"spec_version"`
	// Completed counts a job's replicas that ran to their end (exit 0) in
	// its current iteration, out of Total (replicas, or for a global job
	// the nodes it has run or runs on); both 0 for other services.
	Completed uint64 `json:"completed,omitempty"`
	Total     uint64 `json:"total,omitempty"`
}

func serviceLsCmd(g *globals) *cobra.Command {
	lf := listFlags{keys: map[string][]string{"id": nil, "name": nil, "mode": {"replicated", "global"}}}
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List services with their running and desired replicas and published ports",
		Long: "List services with their running and desired replicas and published ports. PORTS shows\n" +
			"*:PUBLISHED->TARGET/PROTOCOL for a port the routing mesh publishes on every node (ingress), and\n" +
			"PUBLISHED->TARGET/PROTOCOL (host) for one published on the replica's node only.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				all, err := listServices(ctx, c, g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL))
				if err != nil {
					return err
				}
				views := filterServices(all, &lf)
				return writeList(cmd, &lf, views, func(v serviceView) string { return v.ID }, serviceTable)
			})
		},
	}
	lf.add(cmd, "id (prefix), name (prefix), mode (replicated|global|replicated-job|global-job)")
	return cmd
}

func serviceTable(w io.Writer, views []serviceView) error {
	rows := make([][]string, len(views))
	for i, v := range views {
		rows[i] = []string{v.ID, v.Name, v.Mode, replicasText(v), v.Runs, v.Ports}
	}
	return table(w, "ID\tNAME\tMODE\tREPLICAS\tRUNS\tPORTS", rows)
}

// filterServices keeps the services that pass lf's filters.
func filterServices(views []serviceView, lf *listFlags) []serviceView {
	out := make([]serviceView, 0, len(views))
	for _, v := range views {
		if lf.match("id", prefix(v.ID)) && lf.match("name", prefix(v.Name)) && lf.match("mode", equal(v.Mode)) {
			out = append(out, v)
		}
	}
	return out
}

// listServices lists each service with its replicas as counted by the
// daemon asked, from its local store: desired is the live replicas for a
// global service.
func listServices(ctx context.Context, c *client.Client, cons api.ReadConsistency) ([]serviceView, error) {
	svcs, counts, err := c.ListServicesCounted(ctx, &api.ListServicesRequest{Consistency: cons})
	if err != nil {
		return nil, err
	}
	return serviceViews(svcs, counts), nil
}

// serviceViews shows each service with its replica counts, by service id.
func serviceViews(svcs []*api.Service, counts map[string]*api.ReplicaCount) []serviceView {
	views := make([]serviceView, 0, len(svcs))
	for _, s := range svcs {
		v := serviceView{ID: s.Id, Name: s.Spec.Name, Mode: api.ModeWord(s.Spec.Mode),
			Desired: s.Spec.Replicas, Running: counts[s.Id].GetRunning(), Runs: s.Spec.Image, Ports: portsText(s.Spec), SpecVersion: s.SpecVersion}
		if api.PerNode(s.Spec.Mode) {
			v.Desired = counts[s.Id].GetLive()
		}
		jobProgress(&v, s, counts[s.Id])
		if s.Spec.Bundle != nil {
			v.Runs = "hooks bundle"
		}
		views = append(views, v)
	}
	return views
}

// taskView is the JSON shape of one replica in `jaco service ps`.
type taskView struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Node    string    `json:"node"`
	Desired string    `json:"desired"`
	State   string    `json:"state"`
	Since   time.Time `json:"since"`
	Message string    `json:"message"`
	// Error is why the replica failed or did not start: its status
	// message when it failed or was rejected, or when the status names a
	// reason (exit_code, no_suitable_node); else "".
	Error string `json:"error"`
	// Reason is the status's reason word (exit_code, image_pull_denied,
	// ...; docs/design.md §11), for scripts to branch on; "" when none.
	Reason string `json:"reason,omitempty"`
	// nodeID lets --filter node= name the node by id too.
	nodeID string
}

func servicePsCmd(g *globals) *cobra.Command {
	lf := listFlags{keys: map[string][]string{"node": nil, "name": nil, "desired-state": {"running", "shutdown", "complete"}}}
	var all, noTrunc bool
	cmd := &cobra.Command{
		Use:   "ps SERVICE",
		Short: "List a service's replicas with their node and state",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lf.check(); err != nil {
				return err
			}
			return g.call(cmd.Context(), func(ctx context.Context, c *client.Client) error {
				// A desired-state filter looks at every replica: the
				// default hides the replaced ones it may ask for.
				listed, err := listReplicas(ctx, c, args[0], all || lf.has("desired-state"), g.readConsistency(api.ReadConsistency_READ_CONSISTENCY_LOCAL))
				if err != nil {
					return err
				}
				views := filterReplicas(listed, &lf)
				return writeList(cmd, &lf, views, func(v taskView) string { return v.ID }, func(w io.Writer, views []taskView) error {
					return printReplicas(w, views, noTrunc)
				})
			})
		},
	}
	cmd.Flags().BoolVarP(&all, "all", "a", false, "also list replaced and ended replicas")
	cmd.Flags().BoolVar(&noTrunc, "no-trunc", false, "print the ERROR column whole, not cut to 40 characters")
	lf.add(cmd, "node (hostname or id), name (NAME.SLOT), desired-state (running|shutdown|complete; looks at replaced replicas too)")
	return cmd
}

// filterReplicas keeps the replicas that pass lf's filters.
func filterReplicas(views []taskView, lf *listFlags) []taskView {
	out := make([]taskView, 0, len(views))
	for _, v := range views {
		onNode := func(n string) bool { return n == v.Node || n == v.nodeID }
		if lf.match("node", onNode) && lf.match("name", equal(v.Name)) && lf.match("desired-state", equal(v.Desired)) {
			out = append(out, v)
		}
	}
	return out
}

func printReplicas(w io.Writer, views []taskView, noTrunc bool) error {
	rows := make([][]string, len(views))
	for i, v := range views {
		e := terminalSafe(v.Error)
		if !noTrunc {
			e = cut(e, errorWidth)
		}
		rows[i] = []string{v.ID, v.Name, v.Node, v.Desired, v.State, ago(v.Since), e}
	}
	return table(w, "ID\tNAME\tNODE\tDESIRED\tSTATE\tSINCE\tERROR", rows)
}

// errorWidth is how much of a replica's error `service ps` shows unless
// --no-trunc: enough for the reason and the start of the sentence.
const errorWidth = 40

// cut shortens s to n characters, the last an ellipsis when it cut.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// replicaError is what the ERROR column shows: the status message of a
// replica that failed or was rejected, or whose status names a reason.
func replicaError(s *api.TaskStatus) string {
	switch st := s.GetState(); {
	case st == api.TaskState_TASK_STATE_FAILED, st == api.TaskState_TASK_STATE_REJECTED, s.GetReason() != "":
		if m := s.GetMessage(); m != "" {
			return m
		}
		if r := s.GetReason(); r != "" {
			return r
		}
		return fmt.Sprintf("exit code %d", s.GetExitCode())
	}
	return ""
}

// listReplicas lists what runs or should run: every replica desired
// running, and for a slot without one its latest replica, so a slot that
// gave up shows why. all lists the history too.
func listReplicas(ctx context.Context, c *client.Client, service string, all bool, cons api.ReadConsistency) ([]taskView, error) {
	tasks, err := c.ListTasks(ctx, &api.ListTasksRequest{Service: service, Consistency: cons})
	if err != nil {
		return nil, err
	}
	nodes, err := c.ListNodes(ctx, &api.ListNodesRequest{Consistency: cons})
	if err != nil {
		return nil, err
	}
	hostnames := map[string]string{}
	lostNodes := map[string]*api.NodeStatus{}
	for _, n := range nodes {
		hostnames[n.Id] = n.Hostname
		if st := n.GetStatus().GetState(); st == api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED ||
			st == api.NodeStatusState_NODE_STATUS_STATE_DOWN {
			lostNodes[n.Id] = n.Status
		}
	}
	latest := map[string]*api.Task{}
	hasLive := map[string]bool{}
	for _, t := range tasks {
		k := slotKey(t)
		if t.DesiredState == api.TaskState_TASK_STATE_RUNNING {
			hasLive[k] = true
		}
		if l := latest[k]; l == nil || t.Meta.GetCreatedAt().AsTime().After(l.Meta.GetCreatedAt().AsTime()) {
			latest[k] = t
		}
	}
	var views []taskView
	for _, t := range tasks {
		k := slotKey(t)
		show := all || t.DesiredState == api.TaskState_TASK_STATE_RUNNING || (!hasLive[k] && latest[k] == t)
		if !show {
			continue
		}
		v := taskView{
			ID: t.Id, Name: api.ReplicaName(t, hostnames[t.NodeId]), Node: hostnames[t.NodeId], nodeID: t.NodeId,
			Desired: enumword.Of(t.DesiredState), State: stateWords(t.Status),
			Since: t.GetStatus().GetTimestamp().AsTime(), Message: t.GetStatus().GetMessage(), Error: replicaError(t.Status),
			Reason: t.GetStatus().GetReason(),
		}
		if ns := lostNodes[t.NodeId]; ns != nil && t.DesiredState == api.TaskState_TASK_STATE_RUNNING &&
			t.GetStatus().GetState() < api.TaskState_TASK_STATE_COMPLETE {
			// Its node is lost and within its grace: what the replica
			// does is not known (docs/adr/0042).
			v.Since, v.Error, v.Reason = ns.GetTimestamp().AsTime(), ns.GetMessage(), "node_down"
			if ns.GetState() == api.NodeStatusState_NODE_STATUS_STATE_PARTITIONED {
				v.Reason = "partitioned"
			}
			v.State = "unknown: " + v.Reason
		}
		views = append(views, v)
	}
	return views, nil
}

func slotKey(t *api.Task) string {
	if t.Slot == 0 {
		return t.ServiceId + "/node/" + t.NodeId
	}
	return fmt.Sprintf("%s/%d", t.ServiceId, t.Slot)
}

// stateWords renders a replica's state as `jaco service ps` promises:
// "running", "pending: <reason>", "failed: <reason>".
func stateWords(s *api.TaskStatus) string {
	w := enumword.Of(s.GetState())
	switch s.GetState() {
	case api.TaskState_TASK_STATE_PENDING, api.TaskState_TASK_STATE_FAILED, api.TaskState_TASK_STATE_REJECTED:
		if r := s.GetReason(); r != "" {
			return w + ": " + r
		}
		if m := s.GetMessage(); m != "" {
			return w + ": " + m
		}
	}
	return w
}

func ago(t time.Time) string {
	if t.IsZero() || t.Unix() == 0 {
		return "-"
	}
	switch d := time.Since(t); {
	case d < time.Minute:
		return fmt.Sprintf("%ds ago", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	default:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	}
}
