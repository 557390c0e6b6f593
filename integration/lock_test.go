package integration

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDataDirLock starts a second jacod on a data dir a running one owns,
// as a careless restart script or a second unit file would: two raft
// members writing one WAL would corrupt it. The newcomer must give up at
// once, say why, and leave the running daemon (and its socket) alone.
func TestDataDirLock(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, "owner")
	token := d.initQuiet()
	want := d.status()

	start := time.Now()
	r := run(jacodBin, nil, "--data-dir", d.dir, "--listen-addr", "127.0.0.1:0", "--node-name", "intruder")
	elapsed := time.Since(start)
	checkNoRace(t, "second jacod", r.stderr)
	if r.code <= 0 {
		t.Errorf("second jacod on the same data dir: exit code %d, want it to fail", r.code)
	}
	if !strings.Contains(r.stderr, "in use") {
		t.Errorf("second jacod's stderr %q does not say the data dir is in use", r.stderr)
	}
	if elapsed > 10*time.Second {
		t.Errorf("second jacod took %v to give up, want it to fail fast", elapsed)
	}

	if got := d.status(); !reflect.DeepEqual(got, want) {
		t.Errorf("after the second jacod, status on the socket %+v, want %+v", got, want)
	}
	wantOK(t, d.jacoTCP(token, "cluster", "status"))
}
