package dispatcher

import (
	"bytes"
	"slices"
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/state/store"
)

func withRefs(t *api.Task, secrets, configs []string) *api.Task {
	t.Spec = &api.ServiceSpec{Name: "svc"}
	for _, id := range secrets {
		t.Spec.Secrets = append(t.Spec.Secrets, &api.FileReference{Name: "name-" + id, Id: id, Target: "name-" + id, Mode: 0o400})
	}
	for _, id := range configs {
		t.Spec.Configs = append(t.Spec.Configs, &api.FileReference{Name: "name-" + id, Id: id, Target: "/name-" + id, Mode: 0o444})
	}
	return t
}

func secretIDs(m *api.AssignmentsMessage) []string {
	var out []string
	for _, s := range m.Secrets {
		out = append(out, s.Id)
	}
	slices.Sort(out)
	return out
}

func configIDs(m *api.AssignmentsMessage) []string {
	var out []string
	for _, c := range m.Configs {
		out = append(out, c.Id)
	}
	slices.Sort(out)
	return out
}

// A node gets, with its tasks, exactly the secrets and configs they
// reference, whole; never one only another node's tasks reference.
func TestAssignmentsCarryTheirTasksFiles(t *testing.T) {
	h := newHarness(t, workerNode("n1"), workerNode("n2"))
	file := func(id string) *api.FileSpec { return &api.FileSpec{Name: "name-" + id, Data: []byte("data of " + id)} }
	h.create(
		&api.Secret{Id: "s1", Meta: &api.Meta{}, Spec: file("s1")},
		&api.Secret{Id: "s2", Meta: &api.Meta{}, Spec: file("s2")},
		&api.Secret{Id: "s3", Meta: &api.Meta{}, Spec: file("s3")},
		&api.Config{Id: "c1", Meta: &api.Meta{}, Spec: file("c1")},
		&api.Config{Id: "c2", Meta: &api.Meta{}, Spec: file("c2")},
		withRefs(task("t1", "n1", running, assignedS), []string{"s1"}, []string{"c1"}),
		withRefs(task("t2", "n1", running, assignedS), []string{"s1", "s2"}, nil),
		withRefs(task("other", "n2", running, running), []string{"s3"}, []string{"c2"}),
	)
	h.run()
	c, _, sess := h.openSession("n1", nil)
	as, err := c.Assignments(h.ctxFor("n1"), &api.AssignmentsRequest{SessionId: sess.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	msg := nextAssignments(t, as, api.AssignmentsMessage_TYPE_COMPLETE, []string{"t1", "t2"}, nil)
	if got := secretIDs(msg); !slices.Equal(got, []string{"s1", "s2"}) {
		t.Errorf("complete set carries secrets %v, want [s1 s2]", got)
	}
	if got := configIDs(msg); !slices.Equal(got, []string{"c1"}) {
		t.Errorf("complete set carries configs %v, want [c1]", got)
	}
	for _, s := range msg.Secrets {
		if !bytes.Equal(s.GetSpec().GetData(), []byte("data of "+s.Id)) {
			t.Errorf("secret %s sent with data %q, want it whole", s.Id, s.GetSpec().GetData())
		}
	}

	// An incremental message carries the files of the tasks it updates,
	// not those of unchanged ones.
	h.create(withRefs(task("t3", "n1", running, assignedS), nil, []string{"c1"}))
	msg = nextAssignments(t, as, api.AssignmentsMessage_TYPE_INCREMENTAL, []string{"t3"}, nil)
	if len(msg.Secrets) != 0 || !slices.Equal(configIDs(msg), []string{"c1"}) {
		t.Errorf("incremental message carries secrets %v configs %v, want none and [c1]", secretIDs(msg), configIDs(msg))
	}
	h.create(task("t4", "n1", running, assignedS))
	msg = nextAssignments(t, as, api.AssignmentsMessage_TYPE_INCREMENTAL, []string{"t4"}, nil)
	if len(msg.Secrets)+len(msg.Configs) != 0 {
		t.Errorf("a task without references came with secrets %v configs %v", secretIDs(msg), configIDs(msg))
	}
}

// Files too large for one message split the tasks over several, each
// with the files of its own tasks.
func TestSplitFilesBoundsEachPart(t *testing.T) {
	st := store.New(nil)
	t.Cleanup(st.Close)
	var acts []*api.StoreAction
	for _, id := range []string{"a", "b", "c"} {
		acts = append(acts, &api.StoreAction{Kind: api.StoreAction_KIND_CREATE,
			Target: &api.StoreAction_Secret{Secret: &api.Secret{Id: id, Meta: &api.Meta{}, Spec: &api.FileSpec{Name: id, Data: make([]byte, 600)}}}})
	}
	if err := st.Apply(1, &api.InternalRaftRequest{Actions: acts}); err != nil {
		t.Fatal(err)
	}
	run := []*api.Task{
		withRefs(task("t1", "n1", running, running), []string{"a"}, nil),
		withRefs(task("t2", "n1", running, running), []string{"a", "b"}, nil),
		withRefs(task("t3", "n1", running, running), []string{"c"}, nil),
		withRefs(task("t4", "n1", running, running), []string{"c", "gone"}, nil),
	}
	var parts [][]*api.Task
	var fs []files
	st.View(func(tx store.ReadTx) { parts, fs = splitFiles(tx, run, 1500) })
	var got [][]string
	for i, p := range parts {
		got = append(got, ids(p))
		for _, s := range fs[i].secrets {
			got[i] = append(got[i], s.Id)
		}
	}
	want := [][]string{{"t1", "t2", "a", "b"}, {"t3", "t4", "c"}}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("parts (tasks, then secrets) %v, want %v", got, want)
	}
}
