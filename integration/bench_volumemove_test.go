package integration

// The volume move benchmark (docs/bench/volume-move.md): a 200 MiB volume
// moved between the two workers of one container cluster by draining the
// node it lives on, beside `tar | nc` of the same data between the same
// two network namespaces, alternating, three rounds at least.

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	moveBenchFiles   = 4
	moveBenchFileMiB = 50
	moveBenchRounds  = 3
	moveBenchPort    = 9999
)

// verifiedLine is the destination agent's log line of a copy, with the
// pull's duration (agent/volumemove).
var verifiedLine = regexp.MustCompile(`msg="volume move: received and verified".* duration=([0-9.]+[a-zµ]+)`)

// BenchmarkVolumeMove moves the volume back and forth: each round drains
// the node holding it (the other active) and times, from the drain's
// call, the copy verified (the volume's node changed) and the replica
// running on the new node; the destination's own copy duration comes from
// its log. Then it times `tar -c | nc` (bash's /dev/tcp sending, busybox
// nc listening, tar -x, sync -f) of the moved data back across.
// JACO_BENCH_OUT, when set, is the Markdown file the medians go to.
func BenchmarkVolumeMove(b *testing.B) {
	c := newContainerCluster(b, 2)
	c.createService(b, "mv", []string{"--mount", "type=volume,source=mvbench,target=/data", "--volume-move", "move"}, idleCmd)
	home := c.byName(c.waitRunning(b, "mv", 1, nil)[0].Node)
	other := c.workers[0]
	if other == home {
		other = c.workers[1]
	}
	buf := make([]byte, moveBenchFileMiB<<20)
	for i := range moveBenchFiles {
		if _, err := rand.Read(buf); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(dataFile(home, "mvbench", fmt.Sprintf("blob-%d", i)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	mib := float64(moveBenchFiles * moveBenchFileMiB)
	var copyRate, verified, running, tarRate []float64
	rounds := max(b.N, moveBenchRounds)
	b.ResetTimer()
	for i := range rounds {
		seen := len(verifiedLine.FindAllStringSubmatch(readLog(b, other), -1))
		start := time.Now()
		wantOK(b, c.manager.jaco("node", "update", "--availability", "drain", home.name))
		var tVerified time.Duration
		eventually(b, 5*time.Minute, func() error {
			vol, err := decode[volumeState](c.manager.jaco("volume", "inspect", "mvbench"))
			if err != nil || vol.Hostname != other.name {
				return fmt.Errorf("mvbench on %q (%v)", vol.Hostname, err)
			}
			tVerified = time.Since(start)
			return nil
		})
		eventually(b, replicaTimeout, func() error {
			reps, err := c.ps("mv", false)
			if err != nil || len(reps) != 1 || reps[0].State != "running" || reps[0].Node != other.name {
				return fmt.Errorf("mv: %v (%v)", reps, err)
			}
			return nil
		})
		tRunning := time.Since(start)
		var d time.Duration
		eventually(b, 10*time.Second, func() error {
			m := verifiedLine.FindAllStringSubmatch(readLog(b, other), -1)
			if len(m) <= seen {
				return fmt.Errorf("%s logged no verified copy yet", other.name)
			}
			var err error
			d, err = time.ParseDuration(m[len(m)-1][1])
			return err
		})
		eventually(b, goneTimeout, func() error {
			if _, err := os.Stat(filepath.Join(home.dir, "volumes", "mvbench")); err == nil {
				return fmt.Errorf("%s still holds mvbench", home.name)
			}
			return nil
		})
		wantOK(b, c.manager.jaco("node", "update", "--availability", "active", home.name))
		tTar := tarNC(b, other, home, filepath.Dir(dataFile(other, "mvbench", "x")), b.TempDir())
		copyRate = append(copyRate, mib/d.Seconds())
		verified = append(verified, tVerified.Seconds())
		running = append(running, tRunning.Seconds())
		tarRate = append(tarRate, mib/tTar.Seconds())
		b.Logf("round %d %s→%s: copy %v (%.0f MiB/s), verified after %v, running after %v; tar|nc %v (%.0f MiB/s); load %s",
			i, home.name, other.name, d.Round(time.Millisecond), mib/d.Seconds(), tVerified.Round(time.Millisecond),
			tRunning.Round(time.Millisecond), tTar.Round(time.Millisecond), mib/tTar.Seconds(), loadAvg())
		home, other = other, home
	}
	b.StopTimer()
	med := func(xs []float64) float64 { return quantile(xs, 0.5) }
	b.ReportMetric(med(copyRate), "copy-MiB/s")
	b.ReportMetric(med(tarRate), "tar-nc-MiB/s")
	b.ReportMetric(med(running), "drain-to-running-s")
	if out := os.Getenv("JACO_BENCH_OUT"); out != "" {
		writeMoveBench(b, out, rounds, mib, copyRate, verified, running, tarRate)
	}
}

func readLog(b *testing.B, d *nsDaemon) string {
	raw, err := os.ReadFile(d.logPath)
	if err != nil {
		b.Fatal(err)
	}
	return string(raw)
}

// tarNC sends src from from's namespace to a new directory under dst in
// to's, and returns how long it took until the receiving tar had written
// and synced everything.
func tarNC(b *testing.B, from, to *nsDaemon, src, dst string) time.Duration {
	recv := exec.Command("nsenter", "--net=/var/run/netns/"+to.host.ns, "sh", "-c",
		fmt.Sprintf("busybox nc -l -p %d | tar -x -C %s && sync -f %s", moveBenchPort, dst, dst))
	var out strings.Builder
	recv.Stdout, recv.Stderr = &out, &out
	if err := recv.Start(); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	// The listener may not be up yet: connecting is tried again until it
	// is (a refused connection sends nothing).
	send := exec.Command("nsenter", "--net=/var/run/netns/"+from.host.ns, "bash", "-c",
		fmt.Sprintf("for i in $(seq 200); do exec 3>/dev/tcp/%s/%d && break; sleep 0.01; done; tar -c -C %s . >&3",
			to.host.ip, moveBenchPort, src))
	if msg, err := send.CombinedOutput(); err != nil {
		b.Fatalf("tar | nc send: %v: %s", err, msg)
	}
	if err := recv.Wait(); err != nil {
		b.Fatalf("tar | nc receive: %v: %s", err, out.String())
	}
	took := time.Since(start)
	ents, _ := os.ReadDir(dst)
	if !slices.ContainsFunc(ents, func(e os.DirEntry) bool { return e.Name() == "blob-0" }) {
		b.Fatalf("tar | nc: %s holds %v", dst, ents)
	}
	return took
}

func writeMoveBench(b *testing.B, out string, rounds int, mib float64, copyRate, verified, running, tarRate []float64) {
	med := func(xs []float64) float64 { return quantile(xs, 0.5) }
	list := func(xs []float64, f string) string {
		var s []string
		for _, x := range xs {
			s = append(s, fmt.Sprintf(f, x))
		}
		return strings.Join(s, ", ")
	}
	md := fmt.Sprintf(`# Volume move throughput

A %.0f MiB volume (%d files of %d MiB of random data) moved between the
two workers of one container cluster, each jacod in its own network
namespace on one machine (docs/adr/0064-volume-move.md), by draining the
node holding it; beside `+"`tar -c | nc`"+` of the same data between the same two
namespaces (bash's /dev/tcp sending, busybox nc listening into `+"`tar -x`"+`,
then `+"`sync -f`"+`, as the move syncs before it reports). %d rounds, the
volume moving back and forth; each round the move, then `+"`tar | nc`"+` of the
moved data back the other way. Medians:

| | median | rounds |
|---|---|---|
| jaco copy (destination agent: dial, stream, SHA-256 per file, owners/modes/times, syncfs) | %.0f MiB/s | %s |
| tar \| nc + sync | %.0f MiB/s | %s |
| drain → copy verified (volume's node changed) | %.2f s | %s |
| drain → replica running on the new node | %.2f s | %s |

The drain's time includes stopping the old replica (stop-first; the
service's stop grace period is 1 s and the idle command exits at once)
and the scheduler's, the mover's and the dispatcher's steps. Both
paths cross veth pairs on one machine, so they measure CPU (SHA-256,
TLS, tar) more than a network: between real hosts the link's speed
bounds both.

Machine: %s. Load average at the end: %s.

Reproduce (root; containerd, runc, CNI plugins, busybox, as for the
integration tests):

    scripts/bench-volume-move.sh
`, mib, moveBenchFiles, moveBenchFileMiB, rounds,
		med(copyRate), list(copyRate, "%.0f"), med(tarRate), list(tarRate, "%.0f"),
		med(verified), list(verified, "%.2f"), med(running), list(running, "%.2f"),
		machine(), loadAvg())
	if err := os.WriteFile(out, []byte(md), 0o644); err != nil {
		b.Fatal(err)
	}
}

// machine names the CPU and its count.
func machine() string {
	raw, _ := os.ReadFile("/proc/cpuinfo")
	model := "unknown CPU"
	for _, l := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			model = strings.TrimSpace(v)
			break
		}
	}
	return fmt.Sprintf("%s, %d CPUs", model, strings.Count(string(raw), "processor\t:"))
}
