package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// swarmStack is written the way Swarm stacks are: a Postgres-shaped
// service that reads its password from a secret file as a non-root user
// (the official image drops root before it reads POSTGRES_PASSWORD_FILE),
// with templates in its host name and environment, a named volume and a
// deploy section; and a migration job of three completions.
const swarmStack = `
services:
  pg:
    image: ` + containerImage + `
    user: "1000:1000"
    hostname: "pg-{{.Task.Slot}}"
    command: ["sh", "-c", "echo \"pw=$$(cat $$POSTGRES_PASSWORD_FILE) host=$$(hostname) node=$$NODE_NAME\"; trap 'exit 0' INT TERM; while :; do sleep 1 & wait $$!; done"]
    environment:
      POSTGRES_PASSWORD_FILE: /run/secrets/db_password
      NODE_NAME: "{{.Node.Hostname}}"
    secrets: [db_password]
    volumes: [pgdata:/var/lib/postgresql/data]
    stop_grace_period: 1s
    deploy:
      replicas: 1
      labels: {tier: db}
      restart_policy: {condition: on-failure, delay: 1s}
      resources:
        reservations: {memory: 16M}
  migrate:
    image: ` + containerImage + `
    command: ["sh", "-c", "echo migrated slot $$SLOT"]
    environment:
      SLOT: "{{.Task.Slot}}"
    deploy:
      mode: replicated-job
      replicas: 3
secrets:
  db_password:
    file: ./pw.txt
volumes:
  pgdata:
`

// swarmStyleStack: the stack above deploys as written; the non-root
// service reads its secret (mode 0444, Swarm's default), its templates
// are expanded for its replica, and the job completes every slot once.
func (v *volumeTest) swarmStyleStack(t *testing.T) {
	c := v.c
	dir := t.TempDir()
	const password = "pw-7f3a19c2"
	for name, text := range map[string]string{"compose.yaml": swarmStack, "pw.txt": password} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	wantOK(t, c.manager.jaco("stack", "deploy", "-d", "-c", filepath.Join(dir, "compose.yaml"), "sw"))
	pg := c.waitRunning(t, "sw_pg", 1, nil)[0]

	want := regexp.MustCompile(`(?m)^sw_pg\.1@` + regexp.QuoteMeta(pg.Node) + ` \| pw=` + password + ` host=pg-1 node=` + regexp.QuoteMeta(pg.Node) + `$`)
	eventually(t, 30*time.Second, func() error {
		if logs := wantOK(t, c.manager.jaco("service", "logs", "sw_pg")).stdout; !want.MatchString(logs) {
			return fmt.Errorf("sw_pg's log has no line matching %s:\n%s", want, logs)
		}
		return nil
	})
	eventually(t, replicaTimeout, func() error {
		reps, err := c.ps("sw_migrate", true)
		if err != nil {
			return err
		}
		complete := map[string]bool{}
		for _, r := range reps {
			if r.State == "complete" {
				complete[r.Name] = true
			}
		}
		if len(complete) != 3 {
			return fmt.Errorf("%d of 3 slots complete: %+v", len(complete), reps)
		}
		return nil
	})
	// A completed replica's output reaches the kept log a moment after it
	// ends: wait for every slot's line, then require one each.
	var logs string
	eventually(t, 30*time.Second, func() error {
		logs = wantOK(t, c.manager.jaco("service", "logs", "sw_migrate")).stdout
		for slot := 1; slot <= 3; slot++ {
			if !strings.Contains(logs, fmt.Sprintf("| migrated slot %d\n", slot)) {
				return fmt.Errorf("no line from slot %d yet:\n%s", slot, logs)
			}
		}
		return nil
	})
	for slot := 1; slot <= 3; slot++ {
		if n := strings.Count(logs, fmt.Sprintf("| migrated slot %d\n", slot)); n != 1 {
			t.Errorf("slot %d ran %d times, want once:\n%s", slot, n, logs)
		}
	}
	wantOK(t, c.manager.jaco("stack", "rm", "--volumes", "sw"))
	stackGone(t, c, "sw")
}
