package main

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/enumword"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/api/rollout"
)

// waitKind is the command that waits: it decides how a rollback ends.
type waitKind int

const (
	waitConverge waitKind = iota // create, scale
	waitUpdate
	waitRollback
)

// progress judges, from WatchService messages, whether a service has got
// where a write sent it (docs/design.md §8: the update machine's states).
// An update or rollback the write started is followed by its
// update_status; otherwise the service has converged once every slot runs
// the current spec and has done so for the monitor period.
type progress struct {
	kind waitKind
	name string
	// since is the meta.version the write returned: a message about an
	// older version comes from a manager that has not applied the write
	// yet, and says nothing about it.
	since uint64
	// startedAs is the update_status the write left.
	startedAs api.UpdateState
	// follow: an update or rollback is under way; its state decides.
	follow bool
	// rollbackWhy is what the leader said when a rollback started.
	rollbackWhy string
	hostnames   map[string]string
	// firstRunning is when this CLI first saw each task running: the
	// monitor period is counted from running_since (the leader's clock)
	// but never waited for longer than from here.
	firstRunning map[string]time.Time
	// firstSettled is when this CLI first saw each settled_running_since
	// of a large service's messages, for the same bound.
	firstSettled map[time.Time]time.Time
	last         *api.WatchServiceMessage
}

func newProgress(kind waitKind, svc *api.Service, hostnames map[string]string) *progress {
	state := svc.GetUpdateStatus().GetState()
	return &progress{
		kind: kind, name: svc.GetSpec().GetName(), since: svc.GetMeta().GetVersion(),
		startedAs: state, follow: inFlight(state), hostnames: hostnames,
		firstRunning: map[string]time.Time{},
		firstSettled: map[time.Time]time.Time{},
	}
}

func inFlight(s api.UpdateState) bool {
	return s == api.UpdateState_UPDATE_STATE_UPDATING || s == api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED
}

// progressLine is one line of the progress display; key says which line
// it replaces when it changes.
type progressLine struct{ key, text string }

// verdict is where the wait stands after a message or a timer.
type verdict struct {
	lines []progressLine
	done  bool
	err   error
	// wake: judge again after this long even without a message (the
	// monitor period running out).
	wake time.Duration
}

// observe takes a message in; false when it is older than the write and
// changes nothing.
func (p *progress) observe(m *api.WatchServiceMessage, now time.Time) bool {
	if !m.Removed && m.GetService().GetMeta().GetVersion() < p.since {
		return false
	}
	p.last = m
	if rs := m.GetSettledRunningSince(); rs != nil {
		if _, ok := p.firstSettled[rs.AsTime()]; !ok {
			p.firstSettled[rs.AsTime()] = now
		}
	}
	for _, s := range m.Slots {
		if s.State == api.TaskState_TASK_STATE_RUNNING {
			if _, ok := p.firstRunning[s.TaskId]; !ok {
				p.firstRunning[s.TaskId] = now
			}
		}
	}
	return true
}

// judge says where the wait stands at now, after the last message.
func (p *progress) judge(now time.Time) verdict {
	m := p.last
	if m == nil {
		return verdict{}
	}
	if m.Removed {
		return verdict{done: true, lines: []progressLine{{"overall", "removed"}},
			err: reason.Error(codes.NotFound, reason.NotFound, "service %s was removed while waiting for it to converge", p.name)}
	}
	svc := m.Service
	lines := p.slotLines(svc, m)
	status := svc.GetUpdateStatus()
	if inFlight(status.GetState()) {
		p.follow = true // another writer's update counts too: it decides where the service goes
	}
	if p.follow {
		v := p.followUpdate(svc, m)
		v.lines = append(lines, v.lines...)
		return v
	}
	switch status.GetState() {
	case api.UpdateState_UPDATE_STATE_PAUSED, api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED:
		// The service cannot converge until someone resumes or rolls back.
		v := p.followUpdate(svc, m)
		v.lines = append(lines, v.lines...)
		return v
	}
	v := p.converge(svc, m, now)
	v.lines = append(lines, v.lines...)
	return v
}

// followUpdate judges an update or rollback by its state.
func (p *progress) followUpdate(svc *api.Service, m *api.WatchServiceMessage) verdict {
	st := svc.GetUpdateStatus()
	word := updateWord(st.GetState())
	// The leader's message may open with what the state says already, or
	// say only that.
	said := strings.ReplaceAll(word, "_", " ")
	msg := strings.TrimPrefix(strings.TrimPrefix(st.GetMessage(), "update "), said+": ")
	if msg == said {
		msg = ""
	}
	if st.GetState() == api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED && msg != "" {
		p.rollbackWhy = msg // its completion says no more than "rollback completed"
	}
	updated, total := current(svc, m)
	counted := func(done string) verdict {
		return verdict{lines: []progressLine{{"overall", fmt.Sprintf("%s: %d out of %d replicas %s", word, updated, total, done)}}}
	}
	withMessage := func(v verdict) verdict {
		if msg != "" {
			v.lines[0].text += " (" + msg + ")"
		}
		return v
	}
	switch st.GetState() {
	case api.UpdateState_UPDATE_STATE_COMPLETED:
		v := counted("updated")
		v.done = true
		return v
	case api.UpdateState_UPDATE_STATE_ROLLBACK_COMPLETED:
		v := withMessage(counted("rolled back"))
		v.done = true
		if p.kind == waitUpdate && p.startedAs == api.UpdateState_UPDATE_STATE_UPDATING {
			v.err = reason.Error(codes.Aborted, reason.UpdateRolledBack, "update rolled back: %s",
				orDefault(p.rollbackWhy, orDefault(msg, "its failure action rolled it back")))
		}
		return v
	case api.UpdateState_UPDATE_STATE_PAUSED:
		return verdict{done: true, lines: []progressLine{{"overall", word + ": " + orDefault(msg, "no reason given")}},
			err: reason.Error(codes.Aborted, reason.UpdatePaused,
				"update paused: %s; resume it with `jaco service update %s`, or return to the previous spec with `jaco service rollback %s`",
				orDefault(msg, "no reason given"), p.name, p.name)}
	case api.UpdateState_UPDATE_STATE_ROLLBACK_PAUSED:
		return verdict{done: true, lines: []progressLine{{"overall", word + ": " + orDefault(msg, "no reason given")}},
			err: reason.Error(codes.Aborted, reason.RollbackPaused,
				"rollback paused: %s; resume it with `jaco service update %s`", orDefault(msg, "no reason given"), p.name)}
	case api.UpdateState_UPDATE_STATE_ROLLBACK_STARTED:
		return counted("rolled back")
	}
	return counted("updated")
}

// converge judges a service no update is rolling: every slot runs the
// current spec, for the monitor period.
func (p *progress) converge(svc *api.Service, m *api.WatchServiceMessage, now time.Time) verdict {
	replicated := !api.PerNode(svc.GetSpec().GetMode())
	want := slotCount(m)
	if replicated {
		want = int(svc.GetSpec().GetReplicas())
	}
	monitor := rollout.DefaultMonitor
	if d := svc.GetSpec().GetUpdate().GetMonitor(); d != nil {
		monitor = max(d.AsDuration(), 0)
	}
	// A large service's settled slots come counted, with the latest time
	// one of them started running.
	ready := int(m.GetSettled())
	var failed *api.SlotProgress
	var wait time.Duration
	if rs := m.GetSettledRunningSince(); rs != nil {
		wait = min(monitor-now.Sub(p.firstSettled[rs.AsTime()]), monitor-now.Sub(rs.AsTime()))
	}
	extra := false
	job := api.IsJob(svc.GetSpec().GetMode())
	for _, s := range m.Slots {
		if replicated && s.Slot > uint64(want) {
			extra = true
			continue
		}
		if job && s.JobIteration != svc.GetJobStatus().GetIteration() {
			continue // finished in an earlier run, or not started in this one
		}
		if s.DesiredState == api.TaskState_TASK_STATE_COMPLETE {
			// Ended for good (its restart policy allows no more): nothing
			// will change it.
			ready++
			if s.State != api.TaskState_TASK_STATE_COMPLETE {
				failed = s
			}
			continue
		}
		if job || s.State != api.TaskState_TASK_STATE_RUNNING || s.SpecVersion != svc.GetSpecVersion() {
			continue // a job's replica is done once it has ended, not while it runs
		}
		ready++
		left := monitor - now.Sub(p.firstRunning[s.TaskId])
		if rs := s.RunningSince; rs != nil {
			left = min(left, monitor-now.Sub(rs.AsTime()))
		}
		wait = max(wait, left)
	}
	// settled: every slot is where it will stay.
	settled := ready == want && !extra && m.GetUnlisted() == 0 && (want > 0 || replicated)
	switch {
	case !settled && job:
		return verdict{lines: []progressLine{{"overall", fmt.Sprintf("job progress: %d out of %d replicas finished", ready, want)}}}
	case !settled:
		return verdict{lines: []progressLine{{"overall", fmt.Sprintf("overall progress: %d out of %d replicas running", ready, want)}}}
	case wait > 0:
		return verdict{lines: []progressLine{{"overall", fmt.Sprintf("verifying: waiting %s for stability", monitor)}}, wake: wait}
	case failed != nil:
		return verdict{done: true, lines: []progressLine{{"overall", "failed: " + p.slotLabel(svc, failed) + " ended for good"}},
			err: reason.Error(codes.Aborted, reason.ReplicaFailed, "replica %s ended and its restart policy allows no more attempts: %s",
				p.replicaName(svc, failed), orDefault(detail(failed), enumword.Of(failed.State)))}
	}
	if job {
		return verdict{done: true, lines: []progressLine{{"overall", "job complete"}}}
	}
	return verdict{done: true, lines: []progressLine{{"overall", "verified: service converged"}}}
}

// slotCount is how many occupied slots m stands for, listed or not.
func slotCount(m *api.WatchServiceMessage) int {
	return len(m.Slots) + int(m.GetSettled()) + int(m.GetUnlisted())
}

// current counts the slots running the service's current spec, out of the
// slots it should have.
func current(svc *api.Service, m *api.WatchServiceMessage) (updated, total int) {
	total = slotCount(m)
	if !api.PerNode(svc.GetSpec().GetMode()) {
		total = int(svc.GetSpec().GetReplicas())
	}
	updated = int(m.GetSettled())
	for _, s := range m.Slots {
		if s.State == api.TaskState_TASK_STATE_RUNNING && s.SpecVersion == svc.GetSpecVersion() {
			updated++
		}
	}
	return min(updated, total), total
}

// maxShownSlots is how many slots a large service's progress shows, one
// line each, beside the count of those running the current spec; a
// service is large past api.MaxListedSlots slots, where the manager too
// counts the settled ones instead of listing them.
const maxShownSlots = 10

// slotLines is one line per slot: replicated slots 1..N (and any beyond N
// still to be stopped), global ones by node. For a large service one line
// counts the slots running the current spec (the manager counts them
// instead of listing them, WatchServiceMessage), and the first
// maxShownSlots of the others get a line each.
func (p *progress) slotLines(svc *api.Service, m *api.WatchServiceMessage) []progressLine {
	slots := m.Slots
	total := slotCount(m)
	if !api.PerNode(svc.GetSpec().GetMode()) {
		total = max(total, int(svc.GetSpec().GetReplicas()))
	}
	if m.GetSettled() > 0 || m.GetUnlisted() > 0 || total > api.MaxListedSlots {
		return p.largeSlotLines(svc, m, total)
	}
	var lines []progressLine
	if api.PerNode(svc.GetSpec().GetMode()) {
		for _, s := range slots {
			lines = append(lines, progressLine{lineKey(svc, s), p.slotText(svc, s)})
		}
		return lines
	}
	n := svc.GetSpec().GetReplicas()
	bySlot := map[uint64]*api.SlotProgress{}
	for _, s := range slots {
		bySlot[s.Slot] = s
		n = max(n, s.Slot)
	}
	for i := uint64(1); i <= n; i++ {
		key := fmt.Sprintf("slot/%d", i)
		if s := bySlot[i]; s != nil {
			lines = append(lines, progressLine{key, p.slotText(svc, s)})
		} else {
			lines = append(lines, progressLine{key, fmt.Sprintf("%d/%d: no replica yet", i, svc.GetSpec().GetReplicas())})
		}
	}
	return lines
}

// largeSlotLines is a large service's progress, of total slots: a line
// counting those running the current spec, one per slot for the first
// maxShownSlots others, and one counting the rest.
func (p *progress) largeSlotLines(svc *api.Service, m *api.WatchServiceMessage, total int) []progressLine {
	lines := []progressLine{{"settled", fmt.Sprintf("%d out of %d slots running the current spec", m.GetSettled(), total)}}
	shown := m.Slots[:min(len(m.Slots), maxShownSlots)]
	for _, s := range shown {
		lines = append(lines, progressLine{lineKey(svc, s), p.slotText(svc, s)})
	}
	if more := total - int(m.GetSettled()) - len(shown); more > 0 {
		lines = append(lines, progressLine{"more", fmt.Sprintf("… and %d more slots not running the current spec", more)})
	}
	return lines
}

// lineKey names a slot's progress line: its slot number, or its node for
// a global service.
func lineKey(svc *api.Service, s *api.SlotProgress) string {
	if api.PerNode(svc.GetSpec().GetMode()) {
		return "node/" + s.NodeId
	}
	return fmt.Sprintf("slot/%d", s.Slot)
}

// maxDetail bounds the reason and message shown on a slot's line; `jaco
// service ps --no-trunc` shows all of it.
const maxDetail = 120

// slotText renders a slot as "2/3: running", "3/3: pending (old spec):
// exit_code: launch exited 1".
func (p *progress) slotText(svc *api.Service, s *api.SlotProgress) string {
	text := p.slotLabel(svc, s) + ": " + enumword.Of(s.State)
	if s.SpecVersion != svc.GetSpecVersion() {
		text += " (old spec)"
	}
	if replicated := !api.PerNode(svc.GetSpec().GetMode()); replicated && s.Slot > svc.GetSpec().GetReplicas() {
		text += " (to be removed)"
	}
	if d := detail(s); d != "" && s.State != api.TaskState_TASK_STATE_RUNNING && !repeatsState(s) {
		if r := []rune(d); len(r) > maxDetail {
			d = string(r[:maxDetail-1]) + "…"
		}
		text += ": " + d
	}
	return text
}

// slotLabel names a slot as docker does: "2/3" for a replicated slot, the
// node's hostname (or the start of its id) for a global service.
func (p *progress) slotLabel(svc *api.Service, s *api.SlotProgress) string {
	if !api.PerNode(svc.GetSpec().GetMode()) {
		return fmt.Sprintf("%d/%d", s.Slot, svc.GetSpec().GetReplicas())
	}
	if h := p.hostnames[s.NodeId]; h != "" {
		return h
	}
	if len(s.NodeId) > 12 {
		return s.NodeId[:12]
	}
	return s.NodeId
}

// replicaName names a slot's replica as `jaco service ps` does: web.2,
// or web.HOSTNAME for a global service.
func (p *progress) replicaName(svc *api.Service, s *api.SlotProgress) string {
	if !api.PerNode(svc.GetSpec().GetMode()) {
		return fmt.Sprintf("%s.%d", p.name, s.Slot)
	}
	return p.name + "." + p.slotLabel(svc, s)
}

// detail is a slot's "reason: message".
func detail(s *api.SlotProgress) string {
	switch {
	case s.Reason != "" && s.Message != "":
		return s.Reason + ": " + s.Message
	case s.Reason != "":
		return s.Reason
	}
	return s.Message
}

// repeatsState: the slot's only detail is a message that says its state
// again ("assigned to node m" for assigned), which the line shows already.
func repeatsState(s *api.SlotProgress) bool {
	return s.Reason == "" && strings.HasPrefix(strings.ToLower(s.Message), enumword.Of(s.State))
}

// updateWord renders an update state for people: updating, paused,
// completed, rollback_started, rollback_paused, rollback_completed.
func updateWord(s api.UpdateState) string {
	if s == api.UpdateState_UPDATE_STATE_UNSPECIFIED {
		return "updating"
	}
	return enumword.Of(s)
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}
