package agent

import (
	"bytes"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/syncbuf"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// assignFiles adds tasks as assign does, with the secrets and configs
// they name in the same message (and in every later COMPLETE set).
func (d *fakeDispatcher) assignFiles(secrets []*api.Secret, configs []*api.Config, tasks ...*api.Task) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.secrets = append(d.secrets, secrets...)
	d.configs = append(d.configs, configs...)
	m := &api.AssignmentsMessage{Type: api.AssignmentsMessage_TYPE_INCREMENTAL, Secrets: secrets, Configs: configs}
	for _, t := range tasks {
		d.tasks[t.GetId()] = proto.CloneOf(t)
		m.Updated = append(m.Updated, proto.CloneOf(t))
	}
	d.broadcastLocked(m)
}

// secretTask names the secret db_pass (as sec-1) and the config app.
func secretTask(id string) *api.Task {
	t := imageTask(id)
	t.Spec.Secrets = []*api.FileReference{{Name: "db_pass", Id: "sec-1", Uid: 1000}}
	t.Spec.Configs = []*api.FileReference{{Name: "app", Id: "cfg-1", Target: "/etc/app.conf"}}
	return t
}

var (
	secretValue = []byte("agent-secret-0b5e11d2c8")
	testSecret  = &api.Secret{Id: "sec-1", Spec: &api.FileSpec{Name: "db_pass", Data: secretValue}}
	testConfig1 = &api.Config{Id: "cfg-1", Spec: &api.FileSpec{Name: "app", Data: []byte("level=info")}}
)

// findIn lists the files under dir holding b.
func findIn(t *testing.T, dir string, b []byte) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, b) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

func (w *worker) holds() (secrets, configs int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.files.secrets), len(w.files.configs)
}

// Secrets and configs come with assignments and reach the runtime in
// exec.Replica.Files; the agent writes neither to its db nor any file
// (the whole agent dir is searched for the value), logs nothing of them,
// and forgets them once no replica names them.
func TestSecretsReachTheReplicaOnlyInMemory(t *testing.T) {
	d := newFakeDispatcher(t)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	dir := t.TempDir()
	cfg := testConfig(dir, []string{d.addr}, rt)
	var logs syncbuf.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a := startAgent(t, cfg)
	waitfor.Holds(t, 10*time.Second, "a session", d.sessionsReach(1))

	d.assignFiles([]*api.Secret{testSecret}, []*api.Config{testConfig1}, secretTask("t1"))
	waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t1", running))
	rep, ok := rt.replica("t1")
	if !ok || len(rep.Files) != 2 {
		t.Fatalf("replica files %v", rep.Files)
	}
	sec, conf := rep.Files[0], rep.Files[1]
	if !sec.Secret || sec.Name != "db_pass" || sec.Path != "/run/secrets/db_pass" || sec.Mode != 0o444 || sec.UID != 1000 || !bytes.Equal(sec.Data, secretValue) {
		t.Errorf("secret file %v", sec)
	}
	if conf.Secret || conf.Path != "/etc/app.conf" || conf.Mode != 0o444 || string(conf.Data) != "level=info" {
		t.Errorf("config file %v", conf)
	}

	// Gone from the node: the agent forgets the secret and the config.
	d.unassign(false, "t1")
	waitfor.Holds(t, 10*time.Second, "remove", calls(rt, "remove t1", 1))
	waitfor.Holds(t, 10*time.Second, "files forgotten", func() (bool, string) {
		s, c := a.agent.worker.holds()
		return s == 0 && c == 0, fmt.Sprintf("%d secrets, %d configs held", s, c)
	})

	a.stop(t) // the db closed: everything it wrote is in the file
	if found := findIn(t, dir, secretValue); len(found) > 0 {
		t.Errorf("the secret's value is on disk: %v", found)
	}
	if bytes.Contains(logs.Bytes(), secretValue) {
		t.Errorf("the secret's value is in the agent's log")
	}
	if !bytes.Contains(logs.Bytes(), []byte("t1")) {
		t.Errorf("the log search found no log of t1 at all")
	}
}

// A secret that did not come with the assignment fails the replica's
// prepare: secret_missing, naming it.
func TestMissingSecretFailsPrepare(t *testing.T) {
	d, _, _ := setup(t)
	d.assignFiles(nil, []*api.Config{testConfig1}, secretTask("t1"))
	waitfor.Holds(t, 10*time.Second, "FAILED", d.lastIs("t1", failedSt))
	st := d.last("t1")
	if st.GetReason() != ReasonSecretMissing || !strings.Contains(st.GetMessage(), `secret "db_pass"`) {
		t.Fatalf("status %v, want reason %s naming db_pass", st, ReasonSecretMissing)
	}
	task := imageTask("t2")
	task.Spec.Configs = []*api.FileReference{{Name: "nowhere", Id: "cfg-9"}}
	d.assign(task)
	waitfor.Holds(t, 10*time.Second, "FAILED", d.lastIs("t2", failedSt))
	if st := d.last("t2"); st.GetReason() != ReasonConfigMissing || !strings.Contains(st.GetMessage(), `config "nowhere"`) {
		t.Fatalf("status %v, want reason %s naming nowhere", st, ReasonConfigMissing)
	}
}

// An agent restarted before its replica started gets the task back from
// its db but its secret only from the dispatcher: it waits for the first
// assignments rather than fail the replica for want of the secret.
func TestRestartedAgentWaitsForFiles(t *testing.T) {
	d := newFakeDispatcher(t)
	rt := newFakeRuntime(exec.RuntimeContainerd)
	dir := t.TempDir()
	first := startAgent(t, testConfig(dir, []string{d.addr}, rt))
	waitfor.Holds(t, 10*time.Second, "a session", d.sessionsReach(1))
	release := rt.hold("prepare", "t1")
	d.assignFiles([]*api.Secret{testSecret}, []*api.Config{testConfig1}, secretTask("t1"))
	waitfor.Holds(t, 10*time.Second, "prepare", calls(rt, "prepare t1", 1))
	first.stop(t) // in PREPARING, in the db, without its secret
	release()

	addr := d.addr
	d.stop()
	second := startAgent(t, testConfig(dir, []string{addr}, rt))
	waitfor.Holds(t, 10*time.Second, "the replica loaded", func() (bool, string) {
		n := len(second.agent.Replicas())
		return n == 1, fmt.Sprint("replicas: ", n)
	})
	d.start(addr)
	waitfor.Holds(t, 10*time.Second, "RUNNING", d.lastIs("t1", running))
	if d.sawState("t1", failedSt) {
		t.Fatalf("the restarted agent failed the replica: %v", d.last("t1"))
	}
	if rep, _ := rt.replica("t1"); len(rep.Files) != 2 || !bytes.Equal(rep.Files[0].Data, secretValue) {
		t.Fatalf("replica files after the restart: %v", rep.Files)
	}
}

// The parts of a COMPLETE set bring their secrets and configs together.
func TestCompletePartsJoinFiles(t *testing.T) {
	var c CompleteParts
	first := &api.AssignmentsMessage{Type: api.AssignmentsMessage_TYPE_COMPLETE, More: true,
		Updated: []*api.Task{secretTask("t1")}, Secrets: []*api.Secret{testSecret}}
	last := &api.AssignmentsMessage{Type: api.AssignmentsMessage_TYPE_COMPLETE,
		Updated: []*api.Task{secretTask("t2")}, Configs: []*api.Config{testConfig1}}
	if m := c.Add(first); m != nil {
		t.Fatalf("applied a part: %v", m)
	}
	m := c.Add(last)
	if len(m.GetUpdated()) != 2 || len(m.GetSecrets()) != 1 || len(m.GetConfigs()) != 1 {
		t.Fatalf("whole set %v", m)
	}
}
