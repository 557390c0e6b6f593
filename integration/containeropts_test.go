package integration

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// optsScript reports, from inside the container, what the options of
// testContainerOptions should have made of it, one line each, then
// idles until SIGTERM (the service's stop signal), which it reports.
const optsScript = `echo "host=$(hostname) node=$NODE slot=$SLOT"
echo "ids=$(id -u):$(id -g) groups=$(id -G) cwd=$(pwd)"
echo "nofile=$(ulimit -Sn):$(ulimit -Hn) somaxconn=$(cat /proc/sys/net/core/somaxconn)"
grep '^CapEff:' /proc/self/status
(echo x > /rootfs-probe) 2>/dev/null && echo "rootfs=rw" || echo "rootfs=ro"
grep ' /scratch ' /proc/self/mounts | cut -d' ' -f3,4
grep 'gateway' /etc/hosts
trap 'echo "stopped by TERM"; exit 0' TERM
while :; do sleep 1 & wait $!; done`

// testContainerOptions: the process and container options and Swarm
// templates given to `jaco service create` reach each real container as
// Docker would set them (ADR 0059): host name and env expanded per
// replica, user, groups, workdir, ulimit, sysctl, capabilities, read-only
// root, a tmpfs mount, an extra host, and the stop signal a removal sends.
func testContainerOptions(t *testing.T, c *ccluster) {
	c.createService(t, "opts", []string{"--replicas", "2",
		"--hostname", "opts-{{.Task.Slot}}", "-e", "NODE={{.Node.Hostname}}", "-e", "SLOT={{.Task.Slot}}",
		"--user", "1000:1000", "--group", "4242", "--workdir", "/tmp",
		"--ulimit", "nofile=512:1024", "--sysctl", "net.core.somaxconn=1234",
		"--cap-drop", "ALL", "--read-only", "--mount", "type=tmpfs,target=/scratch,tmpfs-size=8m",
		"--host", "gateway:198.18.0.1", "--stop-signal", "SIGTERM",
	}, []string{"sh", "-c", optsScript})
	reps := c.waitRunning(t, "opts", 2, nil)

	var logs string
	eventually(t, 30*time.Second, func() error {
		logs = wantOK(t, c.manager.jaco("service", "logs", "opts")).stdout
		if n := strings.Count(logs, "| rootfs="); n < 2 {
			return fmt.Errorf("%d replicas reported, want 2:\n%s", n, logs)
		}
		return nil
	})
	for _, r := range reps {
		slot := strings.TrimPrefix(r.Name, "opts.")
		prefix := regexp.QuoteMeta(r.Name+"@"+r.Node) + ` \| `
		for _, want := range []string{
			fmt.Sprintf("host=opts-%s node=%s slot=%s", slot, r.Node, slot),
			"ids=1000:1000 groups=1000 4242 cwd=/tmp",
			"nofile=512:1024 somaxconn=1234",
			`CapEff:\s+0000000000000000`,
			"rootfs=ro",
			"tmpfs rw,nosuid,nodev,noexec,relatime,size=8192k",
			`198\.18\.0\.1\s+gateway`,
		} {
			if !regexp.MustCompile(`(?m)^` + prefix + want + `$`).MatchString(logs) {
				t.Errorf("replica %s on %s: no line %q in its log:\n%s", r.Name, r.Node, want, logs)
			}
		}
	}

	// Replaced by `service update --force`, each old replica is stopped
	// with the service's stop signal; the slot keeps its ended replica's
	// log, which says which signal it got.
	wantOK(t, c.manager.jaco("service", "update", "-d", "--force", "opts"))
	for _, r := range reps {
		c.waitGone(t, r.Node, []string{r.ID})
	}
	eventually(t, 30*time.Second, func() error {
		logs = wantOK(t, c.manager.jaco("service", "logs", "opts")).stdout
		for _, r := range reps {
			stopped := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(r.Name+"@"+r.Node) + ` \| stopped by TERM$`)
			if !stopped.MatchString(logs) {
				return fmt.Errorf("replica %s on %s not stopped by SIGTERM:\n%s", r.Name, r.Node, logs)
			}
		}
		return nil
	})
	wantOK(t, c.manager.jaco("service", "rm", "opts"))
}
