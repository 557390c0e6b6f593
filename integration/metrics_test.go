package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jaco-project/jaco/internal/testenv"
)

// alertMetric finds the metric names in the example alerting rules.
var alertMetric = regexp.MustCompile(`\bjaco_[a-z_]+`)

// metricsLine is the log line naming the bound metrics address.
var metricsLine = regexp.MustCompile(`msg="serving metrics" metrics_addr=(\S+)`)

// TestMetricsScrape scrapes a real manager running replicas: every metric
// the operator guide lists is served under its name, with values that
// match what the cluster does, and promtool finds the exposition clean.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.SkipOrFail(t, "promtool (Debian package prometheus) is not installed")
	}
	m := startDaemon(t, "m1", "--metrics-addr", "127.0.0.1:0")
	addr := metricsLine.FindStringSubmatch(m.log())
	if addr == nil {
		t.Fatalf("jacod did not log its metrics address")
	}
	url := "http://" + addr[1] + "/metrics"
	wantOK(t, m.jaco("cluster", "init"))
	out := t.TempDir()
	bundle := writeBundle(t, out, "exec sleep 600")
	wantOK(t, m.jaco("service", "create", "-d", "--name", "web", "--replicas", "2", "-e", "OUT="+out, "--bundle", bundle))
	// A replica no node can take: the pending gauge must name its reason.
	wantOK(t, m.jaco("service", "create", "-d", "--name", "stuck", "--replicas", "1",
		"--constraint", "node.labels.zone==nowhere", "-e", "OUT="+out, "--bundle", bundle))

	want := map[string]float64{
		`jaco_raft_is_leader`:  1,
		`jaco_raft_has_leader`: 1,
		`jaco_raft_members{status="reachable",suffrage="voter"}`:                  1,
		`jaco_raft_apply_lag_entries`:                                             0,
		`jaco_store_objects{kind="service"}`:                                      2,
		`jaco_store_objects{kind="task"}`:                                         3,
		`jaco_scheduler_placements_total`:                                         2,
		`jaco_scheduler_pending_replicas{reason="no_suitable_node"}`:              1,
		`jaco_agent_replicas{state="running"}`:                                    2,
		`jaco_agent_start_duration_seconds_count{runtime="hooks"}`:                2,
		`jaco_dispatcher_sessions`:                                                1,
		`jaco_cluster_nodes{availability="active",role="manager",status="ready"}`: 1,
	}
	var body []byte
	eventually(t, 30*time.Second, func() error {
		body, err = scrape(url)
		if err != nil {
			return err
		}
		values := parseExposition(body)
		for name, v := range want {
			if got, ok := values[name]; !ok || got != v {
				return fmt.Errorf("%s = %v (present %v), want %v", name, got, ok, v)
			}
		}
		return nil
	})

	values := parseExposition(body)
	// Present whatever their values: each names a family the operator
	// guide lists.
	for _, name := range []string{
		"jaco_raft_term", "jaco_raft_leader_changes_total", "jaco_raft_proposals_committed_total",
		"jaco_raft_proposals_failed_total", "jaco_raft_commit_index", "jaco_raft_applied_index",
		"jaco_raft_wal_fsync_duration_seconds_count", "jaco_raft_snapshot_duration_seconds_count",
		"jaco_raft_snapshot_size_bytes", "jaco_scheduler_decision_duration_seconds_count",
		"jaco_dispatcher_missed_heartbeats_total", "jaco_dispatcher_status_updates_per_batch_count",
		"jaco_orchestrator_restarts_total", `jaco_agent_prepare_duration_seconds_count{runtime="hooks"}`,
		`jaco_grpc_server_handled_total{grpc_code="OK",grpc_method="CreateService",grpc_service="jaco.api.ControlService",grpc_type="unary"}`,
		"go_goroutines", "process_resident_memory_bytes",
	} {
		if _, ok := values[name]; !ok {
			t.Errorf("%s is not served", name)
		}
	}
	if v := values["jaco_node_certificate_expiry_seconds"]; v < 80*24*3600 || v > 90*24*3600 {
		t.Errorf("jaco_node_certificate_expiry_seconds = %v, want the default 90-day lifetime, less the minutes since init", v)
	}
	// Every metric the example alerts name is served.
	rules, err := os.ReadFile("../examples/prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range alertMetric.FindAllString(string(rules), -1) {
		if !bytes.Contains(body, []byte("# TYPE "+strings.TrimSuffix(name, "_bucket")+" ")) {
			t.Errorf("examples/prometheus/alerts.yml names %s, which the daemon does not serve", name)
		}
	}
	check := exec.Command(promtool, "check", "metrics")
	check.Stdin = bytes.NewReader(body)
	if msg, err := check.CombinedOutput(); err != nil || len(bytes.TrimSpace(msg)) > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, msg)
	}
}

func scrape(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s\n%s", url, resp.Status, body)
	}
	return body, nil
}

// parseExposition maps each sample of a Prometheus text exposition, named
// with its labels as written, to its value.
func parseExposition(body []byte) map[string]float64 {
	values := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			values[line[:i]] = v
		}
	}
	return values
}
