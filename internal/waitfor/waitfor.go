// Package waitfor is how a test waits on a condition: polled, with a
// deadline, failing with what the condition last said.
package waitfor

import (
	"testing"
	"time"
)

// poll is how often a condition is tried again.
const poll = 50 * time.Millisecond

// Eventually calls cond until it returns nil or timeout passes, then
// fails t with the last error cond returned.
func Eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %v; last: %v", timeout, err)
			return // a testing.TB whose Fatalf returns
		}
		time.Sleep(poll)
	}
}
