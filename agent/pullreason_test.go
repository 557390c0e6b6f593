package agent

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jaco-project/jaco/agent/exec"
)

// A failed prepare says whether the image could not be pulled, and
// whether the registry refused it, whatever wraps the runtime's error.
func TestPrepareReason(t *testing.T) {
	cause := errors.New("dial tcp: connection refused")
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("mount source missing"), ReasonPrepareFailed},
		{fmt.Errorf("prepare: %w", &exec.PullError{Image: "r.test/a", Err: cause}), ReasonImagePullFailed},
		{fmt.Errorf("prepare: %w", &exec.PullError{Image: "r.test/a", Denied: true, Err: cause}), ReasonImagePullDenied},
	} {
		if got := prepareReason(c.err); got != c.want {
			t.Errorf("prepareReason(%v) = %s, want %s", c.err, got, c.want)
		}
	}
}
