package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/manager/encryption"
)

// writeLoad writes continuously through the managers in turn, each write
// a config created over the manager's socket (forwarded to the leader
// over the managers' own mutual TLS), and counts the writes that fail.
// Calls are not retried: a write refused for want of a leader counts.
type writeLoad struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	firstErr   error
	stop       context.CancelFunc
	done       chan struct{}
}

func startWriteLoad(t testing.TB, ms []*daemon) *writeLoad {
	t.Helper()
	var clients []*client.Client
	for _, m := range ms {
		c, err := client.New(client.WithSocket(datadir.Dir(m.dir).Socket()), client.WithoutRetry())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &writeLoad{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for i := 0; ctx.Err() == nil; i++ {
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			_, err := clients[i%len(clients)].Control.CreateConfig(cctx, &api.CreateConfigRequest{
				Spec: &api.FileSpec{Name: fmt.Sprintf("load-%d", i), Data: []byte("x")}})
			ccancel()
			switch {
			case err == nil:
				l.ok.Add(1)
			case ctx.Err() == nil:
				l.failed.Add(1)
				l.mu.Lock()
				if l.firstErr == nil {
					l.firstErr = fmt.Errorf("write %d through %s: %w", i, ms[i%len(ms)].name, err)
				}
				l.mu.Unlock()
			}
			time.Sleep(10 * time.Millisecond) // the machine is shared
		}
	}()
	return l
}

func (l *writeLoad) end() (ok, failed int64, firstErr error) {
	l.stop()
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ok.Load(), l.failed.Load(), l.firstErr
}

// caOf reads `jaco cluster ca`: the signing CA's fingerprint and the
// rotation line.
func caOf(d *daemon) (fp, rotation string, err error) {
	r := d.jaco("cluster", "ca")
	if err := r.err(); err != nil {
		return "", "", err
	}
	m := regexp.MustCompile(`CA fingerprint: ([0-9a-f]{64})\nCA rotation: +(.*)\n`).FindStringSubmatch(r.stdout)
	if m == nil {
		return "", "", fmt.Errorf("cluster ca printed %q", r.stdout)
	}
	return m[1], m[2], nil
}

// checkIssuedBy checks that d's node files trust only the CA newFP and
// hold a certificate it issued.
func checkIssuedBy(t testing.TB, d *daemon, newFP string) {
	t.Helper()
	caPEM, certPEM, _ := nodeCert(t, d)
	cas, err := ca.ParseBundle(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	if len(cas) != 1 || token.FingerprintDER(cas[0].Raw) != newFP {
		t.Errorf("%s trusts %d CAs (first %s), want only %s", d.name, len(cas), token.FingerprintDER(cas[0].Raw), newFP)
	}
	if fp, err := ca.IssuerFingerprint(certPEM, caPEM); err != nil || fp != newFP {
		t.Errorf("%s certificate issued by %q (%v), want %s", d.name, fp, err, newFP)
	}
}

// TestCARotationUnderLoad: three managers and a worker running two
// replicas; while writes go through every manager, `jaco cluster ca
// --rotate` moves the cluster to a new CA. No write fails, the worker's
// replicas keep their processes and its dispatcher session stays up,
// `cluster status` shows the progress, every node ends with a
// certificate of the new CA and trusts it alone, and a certificate of
// the old CA is refused.
func TestCARotationUnderLoad(t *testing.T) {
	t.Parallel()
	ms := formManagers(t, 3)
	for _, m := range ms {
		wantOK(t, ms[0].jaco("node", "update", "--availability", "pause", m.name))
	}
	w := startDaemon(t, "w")
	wantOK(t, w.jaco("node", "join", "--peer", ms[0].addr, "--token", ms[0].joinToken("worker")))
	waitReady(t, ms[0], "w")
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 3600")
	wantOK(t, ms[0].jaco("service", "create", "-d", "--name", "web", "--replicas", "2", "-e", "OUT="+out, "--bundle", bundle))
	var before map[string]replica
	eventually(t, 30*time.Second, func() (err error) { before, err = ms[0].runningReplicas("web", 2); return err })
	pids := map[string]int{}
	for id := range before {
		pids[id] = replicaPid(out, id)
	}
	oldCA, oldCert, oldKey := nodeCert(t, ms[1])
	if err := raftCall(oldCA, oldCert, oldKey, ms[0].addr); status.Code(err) != codes.NotFound {
		t.Fatalf("before the rotation, m2's certificate does not reach m1's raft service: %v", err)
	}
	oldFP, _, err := caOf(ms[0])
	if err != nil {
		t.Fatal(err)
	}
	sessions := strings.Count(w.log(), "dispatcher session ended")

	load := startWriteLoad(t, ms)
	// Writes flowing through every manager before the rotation starts.
	waitWrites := func(atLeast int64) {
		eventually(t, 10*time.Second, func() error {
			if n := load.ok.Load(); n < atLeast {
				return fmt.Errorf("%d writes acknowledged, want %d", n, atLeast)
			}
			return nil
		})
	}
	waitWrites(int64(3 * len(ms)))
	start := time.Now()
	r := wantOK(t, ms[1].jaco("cluster", "ca", "--rotate", "-d"))
	newFP := regexp.MustCompile(`new CA ([0-9a-f]{64})`).FindStringSubmatch(r.stdout)
	if newFP == nil || newFP[1] == oldFP {
		t.Fatalf("cluster ca --rotate printed %q, want a new CA's fingerprint", r.stdout)
	}
	if s := wantOK(t, ms[2].jaco("cluster", "status")); !regexp.MustCompile(`CA rotation: (trust|reissue|drop): \d of 4 nodes`).MatchString(s.stdout) {
		t.Errorf("cluster status during the rotation shows no progress:\n%s", s.stdout)
	}
	var seen []string
	eventually(t, 30*time.Second, func() error {
		fp, rot, err := caOf(ms[2])
		if err != nil {
			return err
		}
		if len(seen) == 0 || seen[len(seen)-1] != rot {
			seen = append(seen, rot)
		}
		if fp != newFP[1] || rot != "none" {
			return fmt.Errorf("CA %s, rotation %q", fp, rot)
		}
		return nil
	})
	took := time.Since(start)
	waitWrites(load.ok.Load() + int64(3*len(ms))) // and after it too
	ok, failed, firstErr := load.end()
	t.Logf("rotation of 4 nodes took %v; progress seen: %q; %d writes during it", took.Round(10*time.Millisecond), seen, ok)
	if failed != 0 || ok == 0 {
		t.Errorf("%d of %d writes failed during the rotation; first: %v", failed, ok+failed, firstErr)
	}

	for _, d := range append(ms, w) {
		checkIssuedBy(t, d, newFP[1])
	}
	// Trusting the new CA, presenting the old CA's certificate: refused.
	newCA, _, _ := nodeCert(t, ms[1])
	if err := raftCall(newCA, oldCert, oldKey, ms[0].addr); err == nil || status.Code(err) == codes.NotFound {
		t.Errorf("a certificate of the old CA still reaches m1's raft service: %v", err)
	}
	now, err := ms[0].runningReplicas("web", 2)
	if err != nil {
		t.Fatal(err)
	}
	for id, pid := range pids {
		if _, ok := now[id]; !ok || replicaPid(out, id) != pid || !alive(pid) {
			t.Errorf("replica %s (pid %d) did not run through the rotation: now %v", id, pid, now)
		}
	}
	if n := strings.Count(w.log(), "dispatcher session ended"); n != sessions {
		t.Errorf("the worker's dispatcher session ended %d times during the rotation", n-sessions)
	}
	ackWrite(t, ms[0], "after-rotation")
}

// TestCARotationExternalCA: a CA the operator brings whose key is not
// its certificate's is refused with ca_invalid and changes nothing; a
// good one is rotated to, the command following the rotation to its end
// and printing the operator token rewritten for the new CA. Autolock is
// on: the manager's TLS key stays sealed through the rotation.
func TestCARotationExternalCA(t *testing.T) {
	t.Parallel()
	m, w := startDaemon(t, "m1"), startDaemon(t, "w1")
	opTok := m.initQuiet()
	wantOK(t, w.jaco("node", "join", "--peer", m.addr, "--token", m.joinToken("worker")))
	waitReady(t, m, w.name)
	wantOK(t, m.jaco("cluster", "update", "--autolock=true"))
	keySealed := func() error {
		_, _, key := nodeCert(t, m)
		if !encryption.PrivateKeySealed(key) {
			return fmt.Errorf("the manager's TLS key is in clear")
		}
		return nil
	}
	eventually(t, 30*time.Second, keySealed)
	dir := t.TempDir()
	certA, keyA, err := ca.NewRootCA("external-a")
	if err != nil {
		t.Fatal(err)
	}
	_, keyB, err := ca.NewRootCA("external-b")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cert, goodKey, badKey := write("ca.pem", certA), write("ca-key.pem", keyA), write("other-key.pem", keyB)
	oldFP, _, err := caOf(m)
	if err != nil {
		t.Fatal(err)
	}

	r := m.jaco("cluster", "ca", "--rotate", "--cert-file", cert, "--key-file", badKey)
	if r.code != 1 || !strings.Contains(r.stderr, "ca_invalid") || !strings.Contains(r.stderr, "does not match") {
		t.Fatalf("rotation to a CA with another key: exit %d, stderr %q; want 1 and ca_invalid", r.code, r.stderr)
	}
	if fp, rot, err := caOf(m); err != nil || fp != oldFP || rot != "none" {
		t.Fatalf("after a refused rotation: CA %s, rotation %q (%v); want %s unchanged, none", fp, rot, err, oldFP)
	}

	wantFP, err := token.Fingerprint(certA)
	if err != nil {
		t.Fatal(err)
	}
	r = wantOK(t, jaco([]string{"JACO_TOKEN=" + opTok}, "--data-dir", m.dir, "cluster", "ca", "--rotate", "--cert-file", cert, "--key-file", goodKey))
	if !strings.Contains(r.stdout, "CA rotation done") || !strings.Contains(r.stdout, wantFP) {
		t.Fatalf("cluster ca --rotate printed:\n%s", r.stdout)
	}
	tok, _ := token.Parse(opTok)
	tok.CAFingerprint = wantFP
	if !strings.Contains(r.stdout, tok.String()) {
		t.Errorf("the operator token rewritten for the new CA is not in:\n%s", r.stdout)
	}
	for _, d := range []*daemon{m, w} {
		checkIssuedBy(t, d, wantFP)
	}
	if err := keySealed(); err != nil {
		t.Errorf("after the rotation: %v", err)
	}
	// The rewritten token works over TCP; the old one is refused as
	// pinning another CA.
	wantOK(t, m.jacoTCP(tok.String(), "node", "ls"))
	if r := m.jacoTCP(opTok, "node", "ls"); r.code == 0 || !strings.Contains(r.stderr, "ca_mismatch") {
		t.Errorf("the old operator token after the rotation: exit %d, %s", r.code, r.stderr)
	}
}

// TestCARotationWaitsForADownNode: a worker that is stopped when the
// rotation starts holds it in its first phase, named in `cluster
// status`; started again, it catches up and the rotation ends with its
// certificate of the new CA too.
func TestCARotationWaitsForADownNode(t *testing.T) {
	t.Parallel()
	m, w := startDaemon(t, "m1"), startDaemon(t, "w1")
	m.initQuiet()
	wantOK(t, w.jaco("node", "join", "--peer", m.addr, "--token", m.joinToken("worker")))
	waitReady(t, m, w.name)
	w.stop()
	r := wantOK(t, m.jaco("cluster", "ca", "--rotate", "-d"))
	newFP := regexp.MustCompile(`new CA ([0-9a-f]{64})`).FindStringSubmatch(r.stdout)
	if newFP == nil {
		t.Fatalf("cluster ca --rotate -d printed %q", r.stdout)
	}
	waiting := "trust: 1 of 2 nodes trust the new CA (waiting for w1)"
	eventually(t, 10*time.Second, func() error {
		if _, rot, err := caOf(m); err != nil || rot != waiting {
			return fmt.Errorf("rotation %q (%v), want %q", rot, err, waiting)
		}
		return nil
	})
	time.Sleep(3 * time.Second) // past a poll round of the manager: still waiting
	if s := wantOK(t, m.jaco("cluster", "status")); !strings.Contains(s.stdout, "CA rotation: "+waiting) {
		t.Fatalf("cluster status with w1 down:\n%s", s.stdout)
	}
	w.start()
	eventually(t, 30*time.Second, func() error {
		fp, rot, err := caOf(m)
		if err == nil && (fp != newFP[1] || rot != "none") {
			err = fmt.Errorf("CA %s, rotation %q", fp, rot)
		}
		return err
	})
	for _, d := range []*daemon{m, w} {
		checkIssuedBy(t, d, newFP[1])
	}
}
