package integration

// jaco stack: a compose file deployed as services, a network, a secret
// and a config, redeployed with one changed image, refused whole for a key
// jaco cannot honour, and removed.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// stackFile is the test's stack: db turns healthy three seconds after it
// starts; web (two replicas, an update policy) waits for it and gets a
// secret and a config.
const stackFile = `
x-quick: &quick
  image: ` + containerImage + `
  stop_grace_period: 1s
  deploy:
    restart_policy: {delay: 1s}
  networks: [back]
services:
  db:
    <<: *quick
    command: ["sh", "-c", "trap 'exit 0' INT TERM; sleep 3; touch /tmp/ready; while :; do sleep 1 & wait $$!; done"]
    healthcheck:
      test: ["CMD", "test", "-f", "/tmp/ready"]
      interval: 1s
      timeout: 1s
      retries: 3
      start_period: 20s
  web:
    <<: *quick
    command: ["httpd", "-f", "-p", "80", "-h", "/www"]
    environment:
      GREETING: hello
    depends_on:
      db: {condition: service_healthy}
    secrets: [token]
    configs:
      - source: site
        target: /etc/site.conf
    deploy:
      replicas: 2
      restart_policy: {delay: 1s}
      update_config: {parallelism: 1, order: start-first, monitor: 1s}
  worker:
    <<: *quick
    command: ["sh", "-c", "trap 'exit 0' INT TERM; while :; do sleep 1 & wait $$!; done"]
    depends_on: [db]
    networks: [back, jobs]
networks:
  back:
  jobs:
secrets:
  token:
    file: ./token.txt
configs:
  site:
    file: ./site.conf
`

// stackService is a row of `jaco stack services --format json`.
type stackService struct {
	Name    string `json:"name"`
	Running uint64 `json:"running"`
	Desired uint64 `json:"desired"`
}

func TestStack(t *testing.T) {
	c := newContainerCluster(t, 2)
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	file := write("compose.yaml", stackFile)
	const secretValue = "s3cret-d2bf61c08e\n" // unlike anything else on disk
	write("token.txt", secretValue)
	write("site.conf", "listen 80\n")
	// The redeploy gives web another image (the same files, another
	// name), loaded on the workers as a release would be pulled.
	const nextImage = "jaco.local/busybox:next"
	nextTar := buildImage(t, nextImage)
	for _, w := range c.workers {
		wantOK(t, w.jaco("image", "load", nextTar))
	}
	override := write("override.yaml", "services:\n  web:\n    image: "+nextImage+"\n")

	// A key jaco cannot honour refuses the whole file, by name, and
	// nothing is created.
	bad := write("bad.yaml", strings.Replace(stackFile, "services:\n", "services:\n  extra:\n    image: x\n    privileged: true\n    devices: [/dev/null]\n", 1))
	r := c.manager.jaco("stack", "deploy", "-c", bad, "-c", override, "bad")
	if r.code != 2 || !strings.Contains(r.stderr, "error: unsupported_compose_key: services.extra.devices, services.extra.privileged: ") {
		t.Fatalf("deploy of a privileged service: exit %d, stderr %q; want 2 and unsupported_compose_key naming both keys", r.code, r.stderr)
	}
	stackGone(t, c, "bad")

	// The first deploy: web starts only once db is healthy.
	wantOK(t, c.manager.jaco("stack", "deploy", "-d", "-c", file, "shop"))
	eventually(t, replicaTimeout, func() error {
		// web first: db only moves forward, so a db not running when read
		// after web was not healthy when web was read either (read the
		// other way round, db can turn healthy and web start in between).
		web, err := c.ps("shop_web", false)
		if err != nil {
			return err
		}
		db, err := c.ps("shop_db", false)
		if err != nil {
			return err
		}
		if len(db) == 1 && db[0].State == "running" {
			return nil
		}
		for _, w := range web {
			if !strings.HasPrefix(w.State, "pending") && !strings.HasPrefix(w.State, "assigned") {
				t.Fatalf("web replica %s is %s while db is %v: it did not wait for db to be healthy", w.Name, w.State, db)
			}
		}
		return fmt.Errorf("db not running yet: %v", db)
	})
	db := c.waitRunning(t, "shop_db", 1, nil)
	web := c.waitRunning(t, "shop_web", 2, nil)
	worker := c.waitRunning(t, "shop_worker", 1, nil)
	for _, w := range web {
		if !w.Since.After(db[0].Since) {
			t.Errorf("web replica %s running since %v, not after db turned healthy at %v", w.Name, w.Since, db[0].Since)
		}
		pid, err := c.runningPid(w.Node, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		root := fmt.Sprintf("/proc/%d/root", pid)
		got, err := os.ReadFile(root + "/run/secrets/token")
		if err != nil || string(got) != secretValue {
			t.Errorf("web replica %s: /run/secrets/token is %q (%v), want the secret file's content", w.Name, got, err)
		}
		if fi, err := os.Stat(root + "/run/secrets/token"); err != nil || fi.Mode().Perm() != 0o444 {
			t.Errorf("web replica %s: /run/secrets/token mode %v (%v), want 0444", w.Name, fi.Mode(), err)
		}
		if got, err := os.ReadFile(root + "/etc/site.conf"); err != nil || string(got) != "listen 80\n" {
			t.Errorf("web replica %s: /etc/site.conf is %q (%v), want the config file's content", w.Name, got, err)
		}
	}
	for _, d := range append([]*nsDaemon{c.manager}, c.workers...) {
		if p, n := findBytes(t, d.dir, []byte(secretValue)); p != "" || n < 10 {
			t.Errorf("the stack's secret is on disk in %q (%d files searched under %s)", p, n, d.dir)
		}
	}
	if p, _ := findBytes(t, c.ctrd.Dir(), []byte(secretValue)); p != "" {
		t.Errorf("the stack's secret is on disk in %s", p)
	}
	spec, err := decode[struct {
		Spec struct {
			Update struct {
				Parallelism uint64 `json:"parallelism"`
				Order       string `json:"order"`
			} `json:"update"`
		} `json:"spec"`
	}](c.manager.jaco("service", "inspect", "shop_web"))
	if err != nil || spec.Spec.Update.Parallelism != 1 || spec.Spec.Update.Order != "start_first" {
		t.Errorf("shop_web's update policy: %+v (%v), want the file's parallelism 1, start-first", spec.Spec.Update, err)
	}
	// From a web replica, db is db: the stack's services answer to their
	// names in the compose file (and to shop_db).
	webNS, err := c.netnsOf(web[0].Node, web[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := c.resolvConfOf(web[0].Node, web[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	dnsAddr, err := nameserver(conf)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		short, _, err := lookupIn(webNS, dnsAddr, "db")
		if err != nil || len(short) != 1 {
			return fmt.Errorf("db from web: %v, %v", short, err)
		}
		long, _, err := lookupIn(webNS, dnsAddr, "shop_db")
		if err != nil || len(long) != 1 || long[0] != short[0] {
			return fmt.Errorf("shop_db from web: %v, %v; want db's VIP %v", long, err, short)
		}
		return nil
	})
	// Everything the stack created carries its label.
	for _, obj := range [][2]string{{"network", "shop_back"}, {"network", "shop_jobs"}, {"secret", "shop_token"}, {"config", "shop_site"}} {
		got, err := decode[struct {
			Spec struct {
				Labels map[string]string `json:"labels"`
			} `json:"spec"`
		}](c.manager.jaco(obj[0], "inspect", obj[1]))
		if err != nil || got.Spec.Labels["jaco.stack.namespace"] != "shop" {
			t.Errorf("%s inspect %s: labels %v (%v), want jaco.stack.namespace=shop", obj[0], obj[1], got.Spec.Labels, err)
		}
	}
	stacks := wantOK(t, c.manager.jaco("stack", "ls"))
	if !strings.Contains(stacks.stdout, "shop") || !strings.Contains(stacks.stdout, "3") {
		t.Errorf("stack ls: %q, want shop with 3 services", stacks.stdout)
	}
	svcs, err := decode[[]stackService](c.manager.jaco("stack", "services", "shop", "--format", "json"))
	if err != nil || len(svcs) != 3 {
		t.Fatalf("stack services shop: %v %+v, want 3 services", err, svcs)
	}

	// Deploying the same file again changes nothing; with the override's
	// image, web alone is updated.
	again := wantOK(t, c.manager.jaco("stack", "deploy", "-c", file, "shop"))
	if strings.Contains(again.stdout, "Updating") || strings.Contains(again.stdout, "Creating") {
		t.Errorf("a second deploy of the same file wrote: %q", again.stdout)
	}
	up := wantOK(t, c.manager.jaco("stack", "deploy", "-q", "-c", file, "-c", override, "shop"))
	if !strings.Contains(up.stdout, "Updating service shop_web") || strings.Count(up.stdout, "Updating") != 1 {
		t.Errorf("redeploy with one changed image printed %q, want web alone updated", up.stdout)
	}
	newWeb := c.waitRunning(t, "shop_web", 2, nil)
	for _, w := range newWeb {
		if slices.ContainsFunc(web, func(old replica) bool { return old.ID == w.ID }) {
			t.Errorf("web replica %s was not replaced by the update", w.ID)
		}
	}
	sameIDs(t, "shop_db", db, c.waitRunning(t, "shop_db", 1, nil))
	sameIDs(t, "shop_worker", worker, c.waitRunning(t, "shop_worker", 1, nil))
	ps, err := decode[[]replica](c.manager.jaco("stack", "ps", "shop", "--format", "json"))
	if err != nil || len(ps) != 4 {
		t.Errorf("stack ps shop: %v, %d replicas, want 4", err, len(ps))
	}

	// --prune removes the service the files no longer have; the others
	// stay as they are.
	i := strings.Index(stackFile, "  worker:\n")
	j := strings.Index(stackFile, "networks:\n  back:")
	noWorker := write("noworker.yaml", strings.Replace(stackFile[:i]+stackFile[j:], "\n  jobs:\n", "\n", 1))
	pruned := wantOK(t, c.manager.jaco("stack", "deploy", "-c", noWorker, "-c", override, "--prune", "shop"))
	if !strings.Contains(pruned.stdout, "Removing service shop_worker") || strings.Contains(pruned.stdout, "Updating") {
		t.Errorf("deploy --prune without worker printed %q, want worker removed and nothing updated", pruned.stdout)
	}
	// ...and the network only worker used, after it; back stays.
	if !strings.Contains(pruned.stdout, "Removing network shop_jobs") || strings.Contains(pruned.stdout, "network shop_back") {
		t.Errorf("deploy --prune without worker and jobs printed %q, want shop_jobs removed and shop_back kept", pruned.stdout)
	}
	nets := wantOK(t, c.manager.jaco("network", "ls", "--format", "{{.name}}")).stdout
	if slices.Contains(strings.Fields(nets), "shop_jobs") || !slices.Contains(strings.Fields(nets), "shop_back") {
		t.Errorf("networks after --prune: %q, want shop_back without shop_jobs", nets)
	}
	if r := c.manager.jaco("service", "inspect", "shop_worker"); r.code != 1 || !strings.Contains(r.stderr, "not_found") {
		t.Errorf("service inspect shop_worker after --prune: exit %d, %q; want not_found", r.code, r.stderr)
	}
	sameIDs(t, "shop_db", db, c.waitRunning(t, "shop_db", 1, nil))

	// rm leaves no service, network or secret of the stack behind.
	wantOK(t, c.manager.jaco("stack", "rm", "shop"))
	stackGone(t, c, "shop")
}

// sameIDs fails unless the replicas are the same ones (not replaced).
func sameIDs(t *testing.T, svc string, before, after []replica) {
	t.Helper()
	ids := func(rs []replica) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}
	if !slices.Equal(ids(before), ids(after)) {
		t.Errorf("%s's replicas changed from %v to %v, though its spec did not", svc, ids(before), ids(after))
	}
}

// stackGone checks that no service, network or secret is named NAME_*.
func stackGone(t *testing.T, c *ccluster, name string) {
	t.Helper()
	for _, what := range []string{"service", "network", "secret"} {
		r := wantOK(t, c.manager.jaco(what, "ls", "--format", "{{.name}}"))
		for _, line := range strings.Fields(r.stdout) {
			if strings.HasPrefix(line, name+"_") {
				t.Errorf("%s %s is left of stack %s", what, line, name)
			}
		}
	}
}
