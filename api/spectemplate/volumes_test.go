package spectemplate

import (
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// The scheduler names a replica's per-slot volume with TaskVolumeSource;
// the agent expands the whole spec with NewContext on the replica's node.
// Both must name the same volume, for a replicated replica and for a
// global one (whose slot is its node).
func TestTaskVolumeSourceAgreesWithExpand(t *testing.T) {
	source := `{{index .Service.Labels "tier"}}-{{.Service.Name}}-{{.Task.Slot}}`
	spec := &api.ServiceSpec{Name: "db", Labels: map[string]string{"tier": "gold"},
		Mounts: []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: source, Target: "/data"}}}
	node := Node{ID: "nodeaaaa", Hostname: "w1"}
	for _, tc := range []struct {
		task *api.Task
		want string
	}{
		{&api.Task{Id: "t1", ServiceId: "svc1", ServiceName: "db", Slot: 2, NodeId: node.ID, Spec: spec}, "gold-db-2"},
		{&api.Task{Id: "t2", ServiceId: "svc1", ServiceName: "db", NodeId: node.ID, Spec: spec}, "gold-db-nodeaaaa"},
	} {
		got, err := TaskVolumeSource(tc.task, source)
		if err != nil || got != tc.want {
			t.Fatalf("slot %d: %q, %v; want %q", tc.task.GetSlot(), got, err, tc.want)
		}
		expanded, err := Expand(spec, NewContext(tc.task, node))
		if err != nil || expanded.GetMounts()[0].GetSource() != got {
			t.Fatalf("slot %d: the agent's expansion %v, %v; want %q as the scheduler's", tc.task.GetSlot(), expanded.GetMounts(), err, got)
		}
	}
	// A global replica not on a node yet has no volume.
	if _, err := TaskVolumeSource(&api.Task{ServiceId: "svc1", Spec: spec}, source); err == nil || !strings.Contains(err.Error(), "no node yet") {
		t.Fatalf("a global replica without a node: %v; want refused", err)
	}
}

// What a volume source may not use is refused, saying why, however it is
// reached; the expansion must be a volume name; a plain name is itself.
func TestVolumeSourceRefusals(t *testing.T) {
	svc := Service{ID: "svc1", Name: "db", Labels: map[string]string{"tier": "gold", "bad": "Gold/x"}}
	for _, tc := range []struct{ source, says string }{
		{"{{.Node.ID}}", ".Node.ID: a volume belongs to its data"},
		{"x-{{if .Node.Hostname}}a{{end}}", ".Node.Hostname"},
		{"{{(.Task).ID}}", "may use only"},
		{"{{.Task.ID}}", ".Task.ID: it differs with every replica"},
		{"{{$.Task.Name}}", ".Task.Name"},
		{"{{with .Task}}{{.ID}}{{end}}", "may use only .Service.ID, .Service.Name, .Service.Labels and .Task.Slot"},
		{"{{.Service.Labels.bad}}-{{.Task.Slot}}", `expands to volume name "Gold/x-3"`},
		{"{{range .Service.Labels}}{{end}}", "range is not offered"},
	} {
		_, err := VolumeSource(tc.source, svc, "3")
		if err == nil || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "template in volume source") {
			t.Errorf("%s: %v; want refused saying %q", tc.source, err, tc.says)
		}
	}
	if got, err := VolumeSource("plain", svc, "3"); got != "plain" || err != nil {
		t.Errorf("a plain name: %q, %v; want itself", got, err)
	}
}
