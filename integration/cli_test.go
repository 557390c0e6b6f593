package integration

import (
	"encoding/base32"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// The JSON the CLI prints, as an operator's script reads it. Declared here
// rather than imported from cmd/jaco so a change of the printed shape
// breaks these tests as it would break those scripts.
type clusterStatus struct {
	State                string   `json:"state"`
	ClusterID            string   `json:"cluster_id"`
	NodeID               string   `json:"node_id"`
	Leader               string   `json:"leader"`
	RaftTerm             uint64   `json:"raft_term"`
	Members              []member `json:"members"`
	FailedUnlockAttempts int      `json:"failed_unlock_attempts"`
}

type member struct {
	NodeID   string `json:"node_id"`
	Hostname string `json:"hostname"`
	Address  string `json:"address"`
	RaftID   string `json:"raft_id"`
	Status   string `json:"status"`
	Suffrage string `json:"suffrage"`
	Leader   bool   `json:"leader"`
}

type nodeEntry struct {
	ID       string `json:"id"`
	Hostname string `json:"hostname"`
	Role     string `json:"role"`
	Address  string `json:"address"`
	RaftID   string `json:"raft_id"`
}

// tokenPattern is the whole text of an operator token (docs/adr/0003).
var tokenPattern = regexp.MustCompile(`JACO1-[0-9a-f]{64}-[a-z2-7]{52}`)

// secretEncoding is how a token's secret is written: 32 random bytes in
// lowercase unpadded base32.
var secretEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// decode parses a successful result's stdout as JSON.
func decode[T any](r result) (T, error) {
	var v T
	if err := r.err(); err != nil {
		return v, err
	}
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		return v, fmt.Errorf("%s: stdout is not the expected JSON: %v\n%s", strings.Join(r.args, " "), err, r.stdout)
	}
	return v, nil
}

func (d *daemon) tryStatus() (clusterStatus, error) {
	return decode[clusterStatus](d.jaco("cluster", "status", "--format", "json"))
}

func (d *daemon) status() clusterStatus {
	d.t.Helper()
	s, err := d.tryStatus()
	if err != nil {
		d.t.Fatal(err)
	}
	return s
}

func (d *daemon) tryNodes() ([]nodeEntry, error) {
	return decode[[]nodeEntry](d.jaco("node", "ls", "--format", "json"))
}

// initQuiet runs `cluster init --quiet` and returns the token, which must
// be the only thing printed: scripts capture it with $(...).
func (d *daemon) initQuiet() string {
	t := d.t
	t.Helper()
	r := wantOK(t, d.jaco("cluster", "init", "--quiet"))
	if !regexp.MustCompile(`\A` + tokenPattern.String() + `\n\z`).MatchString(r.stdout) {
		t.Fatalf("cluster init --quiet printed %q, want one line holding only the token", r.stdout)
	}
	if r.stderr != "" {
		t.Errorf("cluster init --quiet wrote to stderr: %q", r.stderr)
	}
	return strings.TrimSuffix(r.stdout, "\n")
}

// wantOK fails the test unless r succeeded.
func wantOK(t testing.TB, r result) result {
	t.Helper()
	checkNoRace(t, r.args[0], r.stderr)
	if err := r.err(); err != nil {
		t.Fatal(err)
	}
	return r
}

// wantError checks a failure as the CLI promises it: exit code code, nothing
// on stdout, and one line "error: <word>: <sentence>" on stderr.
func wantError(t testing.TB, r result, code int, word string) {
	t.Helper()
	checkNoRace(t, r.args[0], r.stderr)
	cmd := strings.Join(r.args, " ")
	if r.code != code {
		t.Errorf("%s: exit code %d, want %d; stderr: %q", cmd, r.code, code, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("%s: printed %q on stdout on failure, want nothing", cmd, r.stdout)
	}
	prefix := "error: " + word + ": "
	line, rest, _ := strings.Cut(r.stderr, "\n")
	if !strings.HasPrefix(line, prefix) || len(line) == len(prefix) || rest != "" {
		t.Errorf("%s: stderr %q, want one line %q followed by a sentence", cmd, r.stderr, prefix)
	}
}
