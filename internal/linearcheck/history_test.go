package linearcheck

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/jaco-project/jaco/api/reason"
)

func TestOutcomeOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want Outcome
	}{
		{"success", nil, OK},
		{"no leader before proposing", reason.Error(codes.Unavailable, reason.NoLeader, "no leader"), Refused},
		{"version conflict", reason.Error(codes.FailedPrecondition, reason.VersionConflict, "stale"), Refused},
		{"invalid spec", reason.Error(codes.InvalidArgument, reason.InvalidSpec, "bad"), Refused},
		{"not ready", reason.Error(codes.Unavailable, reason.NotReady, "replaying"), Refused},
		{"quorum lost", reason.Error(codes.Unavailable, reason.QuorumLost, "no leader for 30s"), Refused},
		{"wrapped refusal", fmt.Errorf("update web: %w", reason.Error(codes.Unavailable, reason.NoLeader, "x")), Refused},
		{"outcome unknown", reason.Error(codes.Unavailable, reason.OutcomeUnknown, "leader changed"), Unknown},
		// The message text must not decide: only the reason word does.
		{"unavailable without reason", status.Error(codes.Unavailable, "no_leader: no leader"), Unknown},
		{"client unavailable", reason.Error(codes.Unavailable, reason.Unavailable, "dial"), Unknown},
		{"grpc deadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), Unknown},
		{"context deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), Unknown},
		{"plain error", errors.New("connection reset"), Unknown},
	} {
		if got := OutcomeOf(tc.err); got != tc.want {
			t.Errorf("%s: OutcomeOf(%v) = %s, want %s", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestRecorderConcurrentClients(t *testing.T) {
	r := NewRecorder()
	const clients, each = 8, 50
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				p := r.Invoke(c, "add", SetAdd{Element: fmt.Sprintf("%d-%d", c, i)})
				if i%2 == 0 {
					p.DoneErr(nil, nil)
				} else {
					p.DoneErr(nil, reason.Error(codes.Unavailable, reason.NoLeader, "no leader"))
				}
				p.Done(nil, Unknown) // a second return is ignored
			}
		}()
	}
	wg.Wait()

	ops := r.Ops()
	if len(ops) != clients*each {
		t.Fatalf("recorded %d operations, want %d", len(ops), clients*each)
	}
	perClient := map[int]int64{}
	for _, op := range ops {
		if op.Return < op.Invoke {
			t.Errorf("%+v returned before it was invoked", op)
		}
		// One client's operations are sequential, so each is invoked
		// after the previous one returned.
		if op.Invoke < perClient[op.Client] {
			t.Errorf("%+v invoked before client %d's previous operation returned", op, op.Client)
		}
		perClient[op.Client] = op.Return
		if op.Outcome == Refused && op.Err == "" {
			t.Errorf("%+v: a refused operation keeps its error text", op)
		}
	}
}
