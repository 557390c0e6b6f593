package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// target is a replica at 127.0.0.1 whose check command exits with code.
type target struct{ code atomic.Int32 }

func (*target) Address(context.Context) (string, error) { return "127.0.0.1", nil }
func (t *target) Exec(_ context.Context, argv []string) (int, error) {
	if len(argv) == 0 {
		return 0, errors.New("empty argv")
	}
	return int(t.code.Load()), nil
}

func port(t *testing.T, addr string) uint32 {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(p)
	return uint32(n)
}

// closedPort returns a loopback port nothing listens on.
func closedPort(t *testing.T) uint32 {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := port(t, l.Addr().String())
	l.Close()
	return p
}

func TestProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
		case "/moved":
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	httpPort := port(t, srv.Listener.Addr().String())
	closed := closedPort(t)
	cmd := func(argv ...string) *api.HealthCheck {
		return &api.HealthCheck{Test: &api.HealthCheck_Command{Command: &api.CommandCheck{Argv: argv}}}
	}
	get := func(p uint32, path string) *api.HealthCheck {
		return &api.HealthCheck{Test: &api.HealthCheck_Http{Http: &api.HTTPCheck{Port: p, Path: path}}}
	}
	dial := func(p uint32) *api.HealthCheck {
		return &api.HealthCheck{Test: &api.HealthCheck_Tcp{Tcp: &api.TCPCheck{Port: p}}}
	}
	for _, tc := range []struct {
		name    string
		hc      *api.HealthCheck
		code    int32
		healthy bool
	}{
		{"command exit 0", cmd("true"), 0, true},
		{"command exit 1", cmd("false"), 1, false},
		{"command fails to run", cmd(), 0, false},
		{"http 200", get(httpPort, "/ok"), 0, true},
		{"http 302 not followed", get(httpPort, "/moved"), 0, true},
		{"http 500", get(httpPort, "/broken"), 0, false},
		{"http closed port", get(closed, "/"), 0, false},
		{"tcp open", dial(httpPort), 0, true},
		{"tcp closed", dial(closed), 0, false},
		{"no test", &api.HealthCheck{}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tg := &target{}
			tg.code.Store(tc.code)
			err := Probe(context.Background(), tc.hc, tg, time.Second)
			if (err == nil) != tc.healthy {
				t.Fatalf("Probe = %v, want healthy %v", err, tc.healthy)
			}
		})
	}
}

func fast(hc *api.HealthCheck, retries uint32, start time.Duration) *api.HealthCheck {
	hc.Interval = durationpb.New(5 * time.Millisecond)
	hc.Timeout = durationpb.New(time.Second)
	hc.Retries = retries
	hc.StartPeriod = durationpb.New(start)
	return hc
}

func commandCheck() *api.HealthCheck {
	return &api.HealthCheck{Test: &api.HealthCheck_Command{Command: &api.CommandCheck{Argv: []string{"check"}}}}
}

func TestRunHealthyThenUnhealthy(t *testing.T) {
	tg := &target{}
	healthy := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), fast(commandCheck(), 3, 0), tg, func() { healthy <- struct{}{} })
	}()
	select {
	case <-healthy:
	case <-time.After(5 * time.Second):
		t.Fatal("no healthy transition")
	}
	tg.code.Store(1)
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnhealthy) {
			t.Fatalf("Run = %v, want ErrUnhealthy", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not report unhealthy")
	}
}

func TestStartPeriodFailuresNotCounted(t *testing.T) {
	tg := &target{}
	tg.code.Store(1)
	start := time.Now()
	err := Run(context.Background(), fast(commandCheck(), 2, 200*time.Millisecond), tg, func() { t.Error("healthy") })
	if !errors.Is(err, ErrUnhealthy) {
		t.Fatalf("Run = %v, want ErrUnhealthy", err)
	}
	if elapsed := time.Since(start); elapsed < 200*time.Millisecond {
		t.Fatalf("unhealthy after %v, inside the 200ms start period", elapsed)
	}
}

func TestRunStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, commandCheck(), &target{}, func() {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want context.Canceled", err)
	}
}

// A check that sets no timings is judged as Docker judges it: every 30 s,
// each probe given 30 s, unhealthy after 3 failures, no start period.
func TestDefaults(t *testing.T) {
	p := ParamsOf(&api.HealthCheck{})
	want := Params{Interval: 30 * time.Second, Timeout: 30 * time.Second, Retries: 3, StartInterval: 5 * time.Second}
	if p != want {
		t.Fatalf("ParamsOf(empty) = %+v, want Docker's %+v", p, want)
	}
	if p := ParamsOf(&api.HealthCheck{Interval: durationpb.New(time.Second)}); p.StartInterval != time.Second {
		t.Fatalf("StartInterval with a 1 s interval = %v, want the interval", p.StartInterval)
	}
}

// Inside the start period a replica not yet healthy is probed every
// StartInterval, not every Interval: a long interval does not hold back
// its first healthy report; once healthy, probes follow the interval.
func TestStartIntervalBeforeFirstHealthy(t *testing.T) {
	tg := &target{}
	tg.code.Store(1)
	var probes atomic.Int32
	counting := &countingTarget{target: tg, probes: &probes}
	p := Params{Interval: time.Hour, Timeout: time.Second, StartPeriod: time.Minute, StartInterval: 20 * time.Millisecond, Retries: 3}
	healthy := make(chan struct{}, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- runProbes(ctx, commandCheck(), p, counting, Watch{Healthy: func() { healthy <- struct{}{} }})
	}()
	waitfor.Eventually(t, 5*time.Second, func() error {
		if n := probes.Load(); n < 3 {
			return fmt.Errorf("%d probes in the start period, want 3", n)
		}
		return nil
	})
	tg.code.Store(0)
	select {
	case <-healthy:
	case <-time.After(5 * time.Second):
		t.Fatal("no healthy transition within 5 s; the start interval was not used")
	}
	after := probes.Load()
	tg.code.Store(1) // a probe now would count; none comes within the hour
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("runProbes = %v, want context.Canceled", err)
	}
	if n := probes.Load(); n != after {
		t.Fatalf("%d probes after healthy, want none before the hour's interval", n-after)
	}
}

// countingTarget counts the probes made against target.
type countingTarget struct {
	*target
	probes *atomic.Int32
}

func (c *countingTarget) Exec(ctx context.Context, argv []string) (int, error) {
	c.probes.Add(1)
	return c.target.Exec(ctx, argv)
}
