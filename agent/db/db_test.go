package db

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestTasksAndManagersSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	running := &api.Task{Id: "b", Status: &api.TaskStatus{State: api.TaskState_TASK_STATE_RUNNING}}
	for _, task := range []*api.Task{running, {Id: "a"}, {Id: "gone"}} {
		if err := d.PutTask(task); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.DeleteTask("gone"); err != nil {
		t.Fatal(err)
	}
	if err := d.SetManagers([]string{"m1:7000", "m2:7000"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	tasks, err := d.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[0].Id != "a" || tasks[1].Id != "b" || tasks[1].Status.GetState() != api.TaskState_TASK_STATE_RUNNING {
		t.Fatalf("tasks after reopen = %v", tasks)
	}
	managers, err := d.Managers()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"m1:7000", "m2:7000"}; !reflect.DeepEqual(managers, want) {
		t.Fatalf("managers = %v, want %v", managers, want)
	}
}

func TestEmptyManagers(t *testing.T) {
	d, err := Open(filepath.Join(t.TempDir(), "agent.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if m, err := d.Managers(); err != nil || m != nil {
		t.Fatalf("Managers() = %v, %v; want nil, nil", m, err)
	}
}

func TestSecondOpenFailsWhileLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.db")
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d2, err := Open(path); err == nil {
		d2.Close()
		t.Fatal("second Open of a locked db succeeded")
	}
}
