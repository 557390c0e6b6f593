package chaos

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/internal/testcluster"
)

// Bounds of one daemon's start and stop, for a loaded two-core machine.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = 15 * time.Second
)

// member is one jacod manager on a host. It survives kill and restart with
// the same data dir and address, so it stays the same raft member.
type member struct {
	name    string
	host    *testcluster.Host
	dir     string
	logPath string
	flags   []string
	// disk is the mount point of the member's own small filesystem, when
	// it has one (the data dir is inside it); "" otherwise.
	disk string
	// p is the daemon's process (internal/testcluster): in the host's
	// namespace, dead with the runner (Pdeathsig), logging to logPath.
	p *testcluster.Process

	mu sync.Mutex
	// crashed is set when the process exited without the runner ending
	// it: a daemon that dies by itself fails the run.
	crashed error
	ending  bool
}

// newMember returns member name on hs, not started, with its data dir
// and log under dir.
func newMember(name string, hs *testcluster.Host, jacod, dir string, flags []string) *member {
	m := &member{name: name, host: hs, flags: flags,
		dir:     filepath.Join(dir, name),
		logPath: filepath.Join(dir, name+".log"),
	}
	m.p = testcluster.NewProcess(testcluster.Spec{
		Name: "jacod " + name, Path: jacod, Env: testcluster.Environ(), Host: hs,
		Log: m.logPath, Harness: "chaos", Ready: testcluster.ServingLine, OnExit: m.exited,
	})
	m.setArgs()
	return m
}

// setArgs gives the process its arguments for m.dir, which moves when the
// member gets a disk of its own.
func (m *member) setArgs() {
	m.p.SetArgs(append([]string{"--data-dir", m.dir, "--listen-addr", m.addr(), "--advertise-addr", m.addr(), "--node-name", m.name}, m.flags...)...)
}

// exited records an exit the runner did not cause as a crash.
func (m *member) exited(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ending && m.crashed == nil {
		m.crashed = fmt.Errorf("jacod %s exited by itself: %v (log %s)", m.name, err, m.logPath)
	}
}

func (m *member) addr() string   { return m.host.JacodAddr() }
func (m *member) socket() string { return datadir.Dir(m.dir).Socket() }

// start runs jacod inside the host's namespace and waits until it logs
// that it serves. From then on, an exit the runner did not cause is a
// crash.
func (m *member) start(ctx context.Context) error { return m.run(ctx, false) }

// startMayExit is start for a daemon that may exit by itself, at once or
// later, without that counting as a crash (until expectUp).
func (m *member) startMayExit(ctx context.Context) error { return m.run(ctx, true) }

func (m *member) run(ctx context.Context, mayExit bool) error {
	m.mu.Lock()
	m.ending = mayExit
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if _, err := m.p.Start(ctx); err != nil {
		return fmt.Errorf("%w (log %s)", err, m.logPath)
	}
	return nil
}

// running reports whether the process is alive (paused counts).
func (m *member) running() bool { return m.p.Running() }

// allowExit tells the runner the daemon may exit by itself until its next
// start without that counting as a crash.
func (m *member) allowExit() {
	m.mu.Lock()
	m.ending = true
	m.mu.Unlock()
}

// expectUp undoes allowExit: from now on an exit is a crash again.
func (m *member) expectUp() {
	m.mu.Lock()
	m.ending = false
	m.mu.Unlock()
}

// kill SIGKILLs the daemon, as a power loss would stop it.
func (m *member) kill() error {
	if !m.running() {
		return fmt.Errorf("kill: jacod %s is not running", m.name)
	}
	m.allowExit()
	return m.p.Kill()
}

// signalTimeout bounds how long the kernel takes to show that a pause or
// a resume acted.
const signalTimeout = 5 * time.Second

// pause SIGSTOPs the daemon: it keeps its sockets, so peers and clients
// see a member that accepts connections and never answers.
func (m *member) pause(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, signalTimeout)
	defer cancel()
	return m.p.Pause(ctx)
}

// resume SIGCONTs a paused daemon.
func (m *member) resume(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, signalTimeout)
	defer cancel()
	return m.p.Resume(ctx)
}

// stop SIGTERMs the daemon (resuming it if paused) and SIGKILLs it after
// stopTimeout. It reports a daemon that crashed during the run.
func (m *member) stop() error {
	crashed := m.crash()
	if !m.running() {
		return crashed
	}
	m.allowExit()
	return errors.Join(crashed, m.p.Stop(stopTimeout))
}

// crash returns why the daemon died by itself, or nil.
func (m *member) crash() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.crashed
}

// logSince returns what the daemon logged since its latest start.
func (m *member) logSince() string {
	l, _ := m.p.LogSince()
	return l
}
