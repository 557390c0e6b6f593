package integration

// jaco launch: one configuration directory launched twice as two
// namespaces, each hook seeing its own metadata; an invalid directory and
// a launch the manager refuses half way leave nothing; stop, --resume and
// rm act on one namespace only.

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notifyEnv makes the test binary a notify sender (sd_notify style): it
// sends its arguments, one a line, to $JACO_NOTIFY_SOCKET and exits. The
// notify hook runs it so that the test needs no systemd-notify.
const notifyEnv = "JACO_LAUNCH_TEST_NOTIFY"

func init() {
	if os.Getenv(notifyEnv) != "1" {
		return
	}
	conn, err := net.Dial("unixgram", os.Getenv("JACO_NOTIFY_SOCKET"))
	if err == nil {
		_, err = conn.Write([]byte(strings.Join(os.Args[1:], "\n")))
		conn.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "notify:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// notifyHook sends READY=1 two seconds after it starts, having first left
// OUT/ready.REPLICA, then WATCHDOG=1 every 300ms until OUT/silent.REPLICA
// exists.
const notifyHook = `#!/bin/sh
echo $$ > "$OUT/pid.$JACO_REPLICA_ID"
notify() { env ` + notifyEnv + `=1 GORACE=atexit_sleep_ms=0 "$SENDER" "$@"; }
sleep 2
touch "$OUT/ready.$JACO_REPLICA_ID"
notify READY=1
while :; do [ -e "$OUT/silent.$JACO_REPLICA_ID" ] || notify WATCHDOG=1; sleep 0.3; done
`

// launchRow is a row of `jaco launch ls --format json`.
type launchRow struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	Services int    `json:"services"`
}

// launchHook records what a replica sees (its service, namespace and
// metadata variables) in OUT/env.REPLICA and its pid in OUT/pid.REPLICA
// (for killReplicas), then runs until stopped.
const launchHook = `#!/bin/sh
f="$OUT/env.$JACO_REPLICA_ID"
{ echo "service=$JACO_SERVICE_NAME"; echo "ns=$JACO_NAMESPACE_ID"; env | grep '^JACO_META_' | sort; } > "$f.tmp"
mv "$f.tmp" "$f"
echo $$ > "$OUT/pid.$JACO_REPLICA_ID"
exec sleep 3600
`

// writeLaunchDir writes a configuration like examples/launch: db, and web
// (two replicas) depending on it. webLaunch replaces web's launch hook.
func writeLaunchDir(t *testing.T, out, webLaunch string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"db/service":  "# the database\nreplicas = 1\nrestart.delay = 200ms\nlaunch.shutdown_grace_period = 1s\nenv = OUT=" + out + "\n",
		"db/launch":   launchHook,
		"web/service": "replicas = 2\ndepends_on = db\nrestart.delay = 200ms\nlaunch.shutdown_grace_period = 1s\nenv = OUT=" + out + "\n",
		"web/launch":  webLaunch,
	}
	for p, text := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// replicaEnvs reads what every replica recorded, by replica id.
func replicaEnvs(out string) map[string]map[string]string {
	got := map[string]map[string]string{}
	files, _ := filepath.Glob(filepath.Join(out, "env.*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil || strings.HasSuffix(f, ".tmp") {
			continue
		}
		env := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			k, v, _ := strings.Cut(line, "=")
			env[k] = v
		}
		got[strings.TrimPrefix(filepath.Base(f), "env.")] = env
	}
	return got
}

func (d *daemon) launches() ([]launchRow, error) {
	return decode[[]launchRow](d.jaco("launch", "ls", "--format", "json"))
}

// waitLaunchState waits until `launch ls` shows exactly the namespaces
// named in want, each in its state.
func waitLaunchState(t *testing.T, m *daemon, want map[string]string) {
	t.Helper()
	eventually(t, 60*time.Second, func() error {
		rows, err := m.launches()
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, r := range rows {
			got[r.Name] = r.State
		}
		if !maps.Equal(got, want) {
			return fmt.Errorf("launch ls: %+v, want %v", rows, want)
		}
		return nil
	})
}

func serviceNames(t *testing.T, m *daemon) []string {
	t.Helper()
	names := strings.Fields(wantOK(t, m.jaco("service", "ls", "--format", "{{.name}}")).stdout)
	slices.Sort(names)
	return names
}

func TestLaunch(t *testing.T) {
	t.Parallel()
	m := startDaemon(t, "m", "--heartbeat-period", "500ms")
	m.initQuiet()
	waitReady(t, m, "m")
	out := t.TempDir()
	t.Cleanup(func() { killReplicas(out) })
	dir := writeLaunchDir(t, out, launchHook)

	// The same directory twice, with different names and metadata; the
	// first returns at once, the second waits until it runs.
	alpha := wantOK(t, m.jaco("launch", "-d", dir, "-L", "alpha", "-D", "env=prod", "-D", "debug"))
	alphaID, _, _ := strings.Cut(alpha.stdout, "\n")
	beta := wantOK(t, m.jaco("launch", dir, "-L", "beta", "-D", "env=test"))
	betaID, _, _ := strings.Cut(beta.stdout, "\n")
	if !strings.Contains(beta.stdout, "Launch "+betaID+" is running") {
		t.Errorf("launch without -d printed %q, want it to wait until running", beta.stdout)
	}
	waitLaunchState(t, m, map[string]string{"alpha": "running", "beta": "running"})
	if got, want := serviceNames(t, m), []string{"alpha_db", "alpha_web", "beta_db", "beta_web"}; !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}

	// Every hook sees its own namespace and metadata.
	wantEnv := map[string]map[string]string{
		"alpha": {"ns": alphaID, "JACO_META_ENV": "prod", "JACO_META_DEBUG": "true"},
		"beta":  {"ns": betaID, "JACO_META_ENV": "test"},
	}
	eventually(t, 20*time.Second, func() error {
		envs := replicaEnvs(out)
		if len(envs) != 6 {
			return fmt.Errorf("%d replicas recorded their environment, want 6: %v", len(envs), envs)
		}
		for id, env := range envs {
			ns, _, _ := strings.Cut(env["service"], "_")
			want := maps.Clone(wantEnv[ns])
			want["service"] = env["service"]
			if !maps.Equal(env, want) {
				t.Fatalf("replica %s saw %v, want %v", id, env, want)
			}
		}
		return nil
	})
	insp, err := decode[struct {
		ID       string            `json:"id"`
		Meta     map[string]string `json:"meta"`
		Services []struct {
			Name    string `json:"name"`
			Running int    `json:"running"`
		} `json:"services"`
	}](m.jaco("launch", "inspect", "alpha"))
	if err != nil || insp.ID != alphaID || insp.Meta["env"] != "prod" || insp.Meta["debug"] != "true" || len(insp.Services) != 2 {
		t.Errorf("launch inspect alpha: %v %+v", err, insp)
	}

	t.Log("an invalid directory creates nothing, and says where it is wrong")
	bad := writeLaunchDir(t, out, launchHook)
	if err := os.WriteFile(filepath.Join(bad, "web", "service"), []byte("replicas = 2\ndepends_on = db\nrestart.dealy = 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := m.jaco("launch", bad, "-L", "gamma")
	wantError(t, r, 2, "invalid_launch_config")
	if !strings.Contains(r.stderr, `web/service:3: unknown key "restart.dealy"`) {
		t.Errorf("stderr %q does not name web/service:3", r.stderr)
	}

	huge := writeLaunchDir(t, out, "#!/bin/sh\n# "+strings.Repeat("x", 1<<20)+"\nexit 0\n")
	r = m.jaco("launch", huge, "-L", "delta")
	wantError(t, r, 2, "invalid_launch_config")
	if !strings.Contains(r.stderr, "web: the hooks hold") {
		t.Errorf("stderr %q does not name web's hooks as too big", r.stderr)
	}

	t.Log("a launch the manager refuses half way removes what it created")
	wantOK(t, m.jaco("cluster", "update", "--max-services", "5"))
	r = m.jaco("launch", dir, "-L", "delta")
	if r.code != 1 || !strings.Contains(r.stderr, "error: limit_exceeded: service delta_web: ") ||
		!strings.Contains(r.stdout, "Creating service delta_db") || !strings.Contains(r.stdout, "Removed service delta_db") {
		t.Errorf("launch past --max-services: exit %d, stdout %q, stderr %q; want 1, delta_db created then removed, delta_web refused", r.code, r.stdout, r.stderr)
	}
	wantOK(t, m.jaco("cluster", "update", "--max-services", "100"))
	if got := serviceNames(t, m); len(got) != 4 {
		t.Errorf("services %v after refused launches, want alpha's and beta's only", got)
	}
	waitLaunchState(t, m, map[string]string{"alpha": "running", "beta": "running"})

	t.Log("stop and resume one namespace; the other is not touched")
	betaBefore, err := m.runningReplicas("beta_web", 2)
	if err != nil {
		t.Fatal(err)
	}
	wantOK(t, m.jaco("launch", "stop", "alpha"))
	waitLaunchState(t, m, map[string]string{"alpha": "stopped", "beta": "running"})
	eventually(t, 30*time.Second, func() error {
		for _, svc := range []string{"alpha_db", "alpha_web"} {
			if _, err := m.runningReplicas(svc, 0); err != nil {
				return err
			}
		}
		return nil
	})
	wantOK(t, m.jaco("launch", "--resume", alphaID))
	waitLaunchState(t, m, map[string]string{"alpha": "running", "beta": "running"})

	t.Log("resume re-creates a missing service from the recorded directory")
	wantOK(t, m.jaco("service", "rm", "beta_web"))
	// Not whole: scheduling until resumed (stale after --stale-after).
	waitLaunchState(t, m, map[string]string{"alpha": "running", "beta": "scheduling"})
	res := wantOK(t, m.jaco("launch", "--resume", "beta"))
	if !strings.Contains(res.stdout, "Creating service beta_web") {
		t.Errorf("resume printed %q, want beta_web created", res.stdout)
	}
	betaAfter := waitRunningSet(t, m, "beta_web", 2)
	for id := range betaAfter {
		if _, old := betaBefore[id]; old {
			t.Errorf("replica %s of the removed beta_web is listed again", id)
		}
	}
	betaDB, err := m.runningReplicas("beta_db", 1)
	if err != nil {
		t.Fatal(err)
	}

	t.Log("rm removes its namespace only")
	wantOK(t, m.jaco("launch", "rm", "alpha"))
	waitLaunchState(t, m, map[string]string{"beta": "running"})
	if got, want := serviceNames(t, m), []string{"beta_db", "beta_web"}; !slices.Equal(got, want) {
		t.Errorf("services after launch rm alpha: %v, want %v", got, want)
	}
	if still, err := m.runningReplicas("beta_db", 1); err != nil || !slices.Equal(slices.Sorted(maps.Keys(still)), slices.Sorted(maps.Keys(betaDB))) {
		t.Errorf("beta_db's replica changed with launch rm alpha: %v -> %v (%v)", betaDB, still, err)
	}
	wantError(t, m.jaco("launch", "inspect", "alpha"), 1, "not_found")

	t.Log("a launch no node can take goes stale; one whose replica fails past its restart policy is failed")
	stuck := writeLaunchDir(t, out, launchHook)
	if err := os.WriteFile(filepath.Join(stuck, "db", "service"), []byte("constraint = node.labels.zone==nowhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantOK(t, m.jaco("launch", "-d", stuck, "-L", "stuck"))
	crash := writeLaunchDir(t, out, "#!/bin/sh\nexit 3\n")
	if err := os.WriteFile(filepath.Join(crash, "web", "service"), []byte("depends_on = db\nrestart.condition = on-failure\nrestart.max_attempts = 1\nrestart.delay = 100ms\nenv = OUT="+out+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := m.jaco("launch", crash, "-L", "crash"); r.code != 1 || !strings.HasPrefix(r.stderr, "error: replica_failed: launch ") ||
		!strings.Contains(r.stderr, "1 of service crash_web's replicas failed past its restart policy") {
		t.Errorf("launch of a failing web: exit %d, stderr %q; want 1, replica_failed naming crash_web", r.code, r.stderr)
	}
	eventually(t, 30*time.Second, func() error {
		rows, err := decode[[]launchRow](m.jaco("launch", "ls", "--stale-after", "2s", "--format", "json"))
		if err != nil {
			return err
		}
		got := map[string]string{}
		for _, r := range rows {
			got[r.Name] = r.State
		}
		if want := map[string]string{"beta": "running", "stuck": "stale", "crash": "failed"}; !maps.Equal(got, want) {
			return fmt.Errorf("launch ls --stale-after 2s: %+v, want %v", rows, want)
		}
		return nil
	})

	t.Log("resume restarts the replicas given up on")
	r = m.jaco("launch", "--resume", "crash")
	if r.code != 1 || !strings.Contains(r.stdout, "Resuming service crash_web") || !strings.HasPrefix(r.stderr, "error: replica_failed: ") {
		t.Errorf("launch --resume crash: exit %d, stdout %q, stderr %q; want crash_web restarted, and failing again", r.code, r.stdout, r.stderr)
	}
	wantOK(t, m.jaco("launch", "rm", "crash"))
	wantOK(t, m.jaco("launch", "rm", "stuck"))

	t.Log("a global service stops and resumes too")
	glob := t.TempDir()
	if err := os.MkdirAll(filepath.Join(glob, "agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"service": "mode = global\nlaunch.shutdown_grace_period = 1s\nenv = OUT=" + out + "\n", "launch": launchHook} {
		if err := os.WriteFile(filepath.Join(glob, "agent", name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wantOK(t, m.jaco("launch", glob, "-L", "glob"))
	waitRunningSet(t, m, "glob_agent", 1)
	wantOK(t, m.jaco("launch", "stop", "glob"))
	waitRunningSet(t, m, "glob_agent", 0)
	waitLaunchState(t, m, map[string]string{"beta": "running", "glob": "stopped"})
	wantOK(t, m.jaco("launch", "--resume", "glob"))
	waitRunningSet(t, m, "glob_agent", 1)
	waitLaunchState(t, m, map[string]string{"beta": "running", "glob": "running"})

	t.Log("a launch hook with health = notify is not running before it sends READY=1")
	readyDir := t.TempDir()
	sender, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(readyDir, "svc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{
		"service": "health = notify\nhealth.interval = 1s\nhealth.retries = 5\nlaunch.shutdown_grace_period = 1s\n" +
			"env = OUT=" + out + "\nenv = SENDER=" + sender + "\n",
		"launch": notifyHook,
	} {
		if err := os.WriteFile(filepath.Join(readyDir, "svc", name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wantOK(t, m.jaco("launch", "-d", readyDir, "-L", "ready"))
	eventually(t, 30*time.Second, func() error {
		rs, err := m.replicas("ready_svc")
		if err != nil || len(rs) != 1 {
			return fmt.Errorf("ready_svc replicas %v (%v)", rs, err)
		}
		_, statErr := os.Stat(filepath.Join(out, "ready."+rs[0].ID))
		if rs[0].State != "running" {
			return fmt.Errorf("ready_svc is %s", rs[0].State)
		}
		if statErr != nil {
			t.Fatalf("ready_svc's replica is running before its launch hook sent READY=1: %v", statErr)
		}
		return nil
	})
	waitLaunchState(t, m, map[string]string{"beta": "running", "glob": "running", "ready": "running"})

	t.Log("a launch hook that stops sending WATCHDOG=1 is replaced")
	rs, err := m.replicas("ready_svc")
	if err != nil || len(rs) != 1 {
		t.Fatalf("ready_svc replicas %v (%v)", rs, err)
	}
	silent := rs[0].ID
	if err := os.WriteFile(filepath.Join(out, "silent."+silent), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 40*time.Second, func() error {
		rs, err := m.replicas("ready_svc")
		if err != nil || len(rs) != 1 || rs[0].ID == silent || rs[0].State != "running" {
			return fmt.Errorf("ready_svc replicas %v (%v), want one running other than the silent %s", rs, err, silent)
		}
		return nil
	})
	wantOK(t, m.jaco("launch", "rm", "ready"))

	t.Log("the shipped example runs, and its processes end with launch rm")
	ex := wantOK(t, m.jaco("launch", "../examples/launch", "-L", "example", "-D", "environment=ci"))
	exID, _, _ := strings.Cut(ex.stdout, "\n")
	t.Cleanup(func() {
		for _, pid := range namespaceProcs(exID) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if n := len(namespaceProcs(exID)); n < 3 {
		t.Errorf("%d processes of the example's namespace, want at least its 3 launch hooks", n)
	}
	wantOK(t, m.jaco("launch", "rm", "example"))
	eventually(t, 30*time.Second, func() error {
		if pids := namespaceProcs(exID); len(pids) > 0 {
			return fmt.Errorf("processes %v of the removed example still run", pids)
		}
		return nil
	})
}

// namespaceProcs lists the processes whose environment names namespace id:
// the hooks of its replicas.
func namespaceProcs(id string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && slices.Contains(strings.Split(string(env), "\x00"), "JACO_NAMESPACE_ID="+id) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func waitRunningSet(t *testing.T, m *daemon, svc string, n int) map[string]replica {
	t.Helper()
	var run map[string]replica
	eventually(t, 30*time.Second, func() (err error) { run, err = m.runningReplicas(svc, n); return err })
	return run
}
