package metrics_test

import (
	"os/exec"
	"testing"

	"github.com/jaco-project/jaco/internal/testenv"
)

// TestExampleAlerts: the alerting rules the operator guide gives are
// valid, and fire on the series a daemon serves as their tests expect
// (examples/prometheus/alerts_test.yml). TestMetricsScrape checks that a
// daemon serves every metric they name.
func TestExampleAlerts(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		testenv.SkipOrFail(t, "promtool (Debian package prometheus) is not installed")
	}
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = "../../examples/prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
