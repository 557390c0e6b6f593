package health

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jaco-project/jaco/api"
	"google.golang.org/protobuf/types/known/durationpb"
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

func TestDefaults(t *testing.T) {
	p := ParamsOf(&api.HealthCheck{})
	if p.Interval != DefaultInterval || p.Timeout != DefaultTimeout || p.Retries != DefaultRetries || p.StartPeriod != 0 {
		t.Fatalf("ParamsOf(empty) = %+v", p)
	}
}
