package agent

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// slotVolumeTask is slot 2 of web mounting its per-slot volume
// db-{{.Task.Slot}} at /data, with the volumes the scheduler told it.
func slotVolumeTask(id string, told ...*api.TaskVolume) *api.Task {
	t := imageTask(id)
	t.Slot = 2
	t.Spec.Mounts = []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "db-{{.Task.Slot}}", Target: "/data"}}
	t.Volumes = told
	return t
}

// The runtime mounts the replica's per-slot volume: the source expanded
// for its slot, with the id and options the scheduler resolved
// (docs/adr/0061-volumes.md); the agent keeps the spec as sent.
func TestRuntimeMountsSlotVolume(t *testing.T) {
	d := newFakeDispatcher(t)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	a := startAgent(t, testConfig(t.TempDir(), []string{d.addr}, rt))
	waitfor.Holds(t, 10*time.Second, "a session", d.sessionsReach(1))
	opts := map[string]string{"type": "tmpfs"}
	sent := slotVolumeTask("t1", &api.TaskVolume{Target: "/data", Name: "db-2", Id: "vol-db-2", Options: opts})
	d.assign(sent)
	waitfor.Eventually(t, 10*time.Second, func() error {
		if ok, seen := d.lastIs("t1", running)(); !ok {
			return errors.New(seen)
		}
		return nil
	})
	rep, ok := rt.replica("t1")
	if !ok {
		t.Fatal("the runtime made no controller for t1")
	}
	m := rep.Task.GetSpec().GetMounts()[0]
	if m.GetSource() != "db-2" || m.GetVolumeId() != "vol-db-2" || !maps.Equal(m.GetVolumeOptions(), opts) || m.GetType() != api.MountType_MOUNT_TYPE_VOLUME {
		t.Fatalf("the runtime saw mount %v; want volume db-2, id vol-db-2, type=tmpfs", m)
	}
	if got := rep.Task.GetVolumes(); len(got) != 1 {
		t.Fatalf("the runtime's task volumes %v; want the one sent", got)
	}
	if kept := a.agent.Replicas(); len(kept) != 1 || !proto.Equal(kept[0].GetSpec(), sent.GetSpec()) {
		t.Fatalf("the agent keeps %v; want the spec as sent, its template kept", kept)
	}
}

// A replica whose per-slot volume the manager did not resolve, or
// resolved under another name than this node expands, is refused
// (invalid_spec, naming both) rather than started on a volume no one
// chose.
func TestSlotVolumeDisagreementRejects(t *testing.T) {
	d, rt, _ := setup(t)
	d.assign(
		slotVolumeTask("none"),
		slotVolumeTask("other", &api.TaskVolume{Target: "/data", Name: "db-9", Id: "vol-db-9"}),
	)
	for id, says := range map[string]string{
		"none":  `source "db-{{.Task.Slot}}" names a per-slot volume, and the manager resolved none`,
		"other": `expands to "db-2" on this node, but the manager resolved volume db-9`,
	} {
		waitfor.Eventually(t, 10*time.Second, func() error {
			if ok, seen := d.lastIs(id, rejected)(); !ok {
				return errors.New(seen)
			}
			return nil
		})
		if st := d.last(id); st.GetReason() != ReasonInvalidSpec || !strings.Contains(st.GetMessage(), says) {
			t.Errorf("%s: status %v; want %s saying %q", id, st, ReasonInvalidSpec, says)
		}
		if n := rt.count("prepare " + id); n != 0 {
			t.Errorf("%s: the runtime prepared it: %v", id, rt.callLog())
		}
	}
}
