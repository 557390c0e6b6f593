package main

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/launchdir"
)

// States of a launch configuration's namespace, as `jaco launch ls` shows
// them (docs/operator-guide.md, "Launch configurations").
const (
	launchScheduling = "scheduling"
	launchRunning    = "running"
	launchFailed     = "failed"
	launchStale      = "stale"
	launchStopped    = "stopped"
)

// labelStopped marks a service `jaco launch stop` scaled to 0 (its value
// the time); `launch --resume` removes it.
const labelStopped = "jaco.launch.stopped"

// stopConstraint keeps a stopped global service on no node: no node
// carries this label (a global service cannot be scaled to 0).
const stopConstraint = "node.labels." + labelStopped + "==" + "stopped"

// launchView is a namespace in `jaco launch ls` and `launch inspect`.
type launchView struct {
	ID    string    `json:"id"`
	Name  string    `json:"name"`
	State string    `json:"state"`
	Since time.Time `json:"since"`
	// Dir is the configuration's directory on the host that launched it.
	Dir      string              `json:"dir"`
	Meta     map[string]string   `json:"meta"`
	Services []launchServiceView `json:"services"`
	// Missing are the configuration's services the namespace has not
	// (removed by hand): `launch --resume` creates them again.
	Missing []string `json:"missing"`
}

// launchServiceView is one service of a namespace.
type launchServiceView struct {
	// Service is the service's directory name in the configuration;
	// Name the cluster's name for it (PREFIX_SERVICE).
	Service string `json:"service"`
	Name    string `json:"name"`
	ID      string `json:"id"`
	Desired uint64 `json:"desired"`
	Running uint64 `json:"running"`
	// GivenUp counts replicas that failed and that the restart policy
	// does not restart (past max_attempts, or condition none).
	GivenUp uint64 `json:"given_up"`
	// Done counts replicas that ended successfully and are not restarted.
	Done uint64 `json:"done"`
}

// namespaceViews groups the services labelled with a namespace and
// judges each namespace's state from its replicas (tasks), sorted by name
// then id. A namespace is
//   - stopped when `launch stop` stopped it (until `launch --resume`);
//   - failed when some service is short of replicas and has a replica the
//     cluster gave up on (failed, not restarted under its restart policy);
//   - running when every service has as many replicas running (or ended
//     successfully, not to be restarted) as it wants;
//   - scheduling otherwise (a service of the configuration missing
//     included), and stale once it has been scheduling longer than
//     staleAfter.
//
// Since is the namespace's latest change: a service written (created,
// scaled, resumed) or a replica changing state. A stale namespace is so
// one where nothing has happened for staleAfter.
func namespaceViews(svcs []*api.Service, tasks []*api.Task, now time.Time, staleAfter time.Duration) []launchView {
	byService := map[string][]*api.Task{}
	for _, t := range tasks {
		byService[t.ServiceId] = append(byService[t.ServiceId], t)
	}
	views := map[string]*launchView{}
	var order []string
	stopped := map[string]bool{}
	for _, s := range svcs {
		ns, ok := launchdir.FromLabels(s.GetSpec().GetLabels())
		if !ok {
			continue
		}
		v := views[ns.ID]
		if v == nil {
			v = &launchView{ID: ns.ID, Name: ns.Name, Meta: ns.Meta, Dir: s.Spec.Labels[launchdir.LabelDir]}
			views[ns.ID] = v
			order = append(order, ns.ID)
		}
		for _, name := range strings.Split(s.Spec.Labels[launchdir.LabelServices], ",") {
			if name != "" && !slices.Contains(v.Missing, name) {
				v.Missing = append(v.Missing, name)
			}
		}
		if _, ok := s.Spec.Labels[labelStopped]; ok {
			stopped[ns.ID] = true
		}
		v.Since = latest(v.Since, s.GetMeta().GetUpdatedAt().AsTime())
		sv := launchServiceView{Service: s.Spec.Labels[launchdir.LabelService], Name: s.Spec.Name, ID: s.Id, Desired: s.Spec.Replicas}
		var live uint64
		for _, t := range byService[s.Id] {
			v.Since = latest(v.Since, t.GetStatus().GetTimestamp().AsTime())
			state := t.GetStatus().GetState()
			switch t.DesiredState {
			case api.TaskState_TASK_STATE_RUNNING:
				live++
				if state == api.TaskState_TASK_STATE_RUNNING {
					sv.Running++
				}
			case api.TaskState_TASK_STATE_COMPLETE:
				// The slot is finished: the restart policy said no more.
				if t.SpecVersion != s.SpecVersion {
					continue
				}
				if state == api.TaskState_TASK_STATE_FAILED || state == api.TaskState_TASK_STATE_REJECTED || t.GetStatus().GetExitCode() != 0 {
					sv.GivenUp++
				} else {
					sv.Done++
				}
			}
		}
		if s.Spec.Mode == api.ServiceMode_SERVICE_MODE_GLOBAL {
			sv.Desired = live + sv.GivenUp + sv.Done
		}
		v.Services = append(v.Services, sv)
	}
	out := make([]launchView, 0, len(order))
	for _, id := range order {
		v := views[id]
		slices.SortFunc(v.Services, func(a, b launchServiceView) int { return strings.Compare(a.Service, b.Service) })
		v.Missing = slices.DeleteFunc(v.Missing, func(name string) bool {
			return slices.ContainsFunc(v.Services, func(s launchServiceView) bool { return s.Service == name })
		})
		slices.Sort(v.Missing)
		v.State = judge(v.Services)
		if len(v.Missing) > 0 && v.State == launchRunning {
			v.State = launchScheduling // not whole until --resume
		}
		switch {
		case stopped[id]:
			v.State = launchStopped
		case v.State == launchScheduling && now.Sub(v.Since) > staleAfter:
			v.State = launchStale
		}
		out = append(out, *v)
	}
	slices.SortFunc(out, func(a, b launchView) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

func judge(svcs []launchServiceView) string {
	state := launchRunning
	for _, s := range svcs {
		if s.Running+s.Done >= s.Desired {
			continue
		}
		if s.GivenUp > 0 {
			return launchFailed
		}
		state = launchScheduling
	}
	return state
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// configuredReplicas is the replica count the configuration gave a
// service, recorded in its labels.
func configuredReplicas(spec *api.ServiceSpec) (uint64, bool) {
	n, err := strconv.ParseUint(spec.GetLabels()[launchdir.LabelReplicas], 10, 64)
	return n, err == nil
}
