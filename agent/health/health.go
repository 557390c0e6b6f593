// Package health runs a replica's health check (api.HealthCheck): a
// command in the replica, an HTTP GET or a TCP dial to its address, or
// the replica's own READY=1 and WATCHDOG=1 on its notify socket (see
// runNotify).
//
// The check runs at once and then every interval, each probe bounded by
// the timeout. The first success calls OnHealthy; when retries probes in a
// row fail, Run returns ErrUnhealthy. Failures during the start period do
// not count (a replica may take that long to come up), unless a probe has
// already succeeded, which ends the start period early.
package health

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// Defaults for the fields a spec leaves zero: Docker's, so an image's
// healthcheck written for Docker is judged as Docker judges it (a slow
// database is not killed after 3 s; docs/adr/0059).
const (
	DefaultInterval = 30 * time.Second
	DefaultTimeout  = 30 * time.Second
	DefaultRetries  = 3
	// StartInterval is the longest wait between probes during the start
	// period of a replica not yet healthy (Docker's start_interval), so a
	// long interval does not hold back its first healthy report.
	StartInterval = 5 * time.Second
)

// ErrUnhealthy is returned by Run when the check failed retries times in a
// row.
var ErrUnhealthy = errors.New("replica unhealthy")

// Target is the replica a check probes (an exec.Controller fits).
type Target interface {
	Address(ctx context.Context) (string, error)
	Exec(ctx context.Context, argv []string) (int, error)
}

// Params are a check's timings with defaults filled in. StartInterval is
// the wait between probes inside the start period until the first
// success: the shorter of Interval and the package's StartInterval.
type Params struct {
	Interval, Timeout, StartPeriod, StartInterval time.Duration
	Retries                                       int
}

// ParamsOf returns hc's timings with the defaults for zero fields.
func ParamsOf(hc *api.HealthCheck) Params {
	p := Params{Interval: DefaultInterval, Timeout: DefaultTimeout, Retries: DefaultRetries}
	if d := hc.GetInterval().AsDuration(); d > 0 {
		p.Interval = d
	}
	p.StartInterval = min(p.Interval, StartInterval)
	if d := hc.GetTimeout().AsDuration(); d > 0 {
		p.Timeout = d
	}
	if n := hc.GetRetries(); n > 0 {
		p.Retries = int(n)
	}
	p.StartPeriod = hc.GetStartPeriod().AsDuration()
	return p
}

// Run probes target per hc until ctx ends (returns ctx.Err()) or the
// replica is unhealthy (returns an error wrapping ErrUnhealthy and the last
// probe's failure). onHealthy is called on every transition to healthy
// (the first success, and a success after failures).
func Run(ctx context.Context, hc *api.HealthCheck, target Target, onHealthy func()) error {
	return RunWatch(ctx, hc, target, Watch{Healthy: onHealthy})
}

// RunWatch is Run telling w. A notify check needs a target that is an
// exec.Notifier (ErrNoNotifier, wrapped in ErrUnhealthy, otherwise).
func RunWatch(ctx context.Context, hc *api.HealthCheck, target Target, w Watch) error {
	if hc.GetNotify() != nil {
		n, ok := target.(exec.Notifier)
		if !ok {
			return fmt.Errorf("%w: %w", ErrUnhealthy, ErrNoNotifier)
		}
		return runNotify(ctx, hc, n, w)
	}
	return runProbes(ctx, hc, ParamsOf(hc), target, w)
}

// runProbes probes target per hc on p's timings (RunWatch without a
// notify check).
func runProbes(ctx context.Context, hc *api.HealthCheck, p Params, target Target, w Watch) error {
	onHealthy := w.Healthy
	if onHealthy == nil {
		onHealthy = func() {}
	}
	startEnds := time.Now().Add(p.StartPeriod)
	healthy, everHealthy := false, false
	failures := 0
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		err := Probe(ctx, hc, target, p.Timeout)
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			failures = 0
			everHealthy = true
			if !healthy {
				healthy = true
				onHealthy()
			}
		case !everHealthy && time.Now().Before(startEnds):
			// Still starting: not counted.
		default:
			healthy = false
			failures++
			if failures >= p.Retries {
				return fmt.Errorf("%w: %d checks in a row failed, last: %w", ErrUnhealthy, failures, err)
			}
		}
		next := p.Interval
		if !everHealthy && time.Now().Before(startEnds) {
			next = p.StartInterval
		}
		t.Reset(next)
	}
}

// Probe runs hc's test once against target within timeout; nil is healthy.
func Probe(ctx context.Context, hc *api.HealthCheck, target Target, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	switch test := hc.GetTest().(type) {
	case *api.HealthCheck_Command:
		code, err := target.Exec(ctx, test.Command.GetArgv())
		if err != nil {
			return fmt.Errorf("run check command: %w", err)
		}
		if code != 0 {
			return fmt.Errorf("check command exited with code %d", code)
		}
		return nil
	case *api.HealthCheck_Http:
		addr, err := address(ctx, target, test.Http.GetPort())
		if err != nil {
			return err
		}
		return probeHTTP(ctx, "http://"+addr+test.Http.GetPath())
	case *api.HealthCheck_Notify:
		return errors.New("a notify check has no probe: the replica sends its messages")
	case *api.HealthCheck_Tcp:
		addr, err := address(ctx, target, test.Tcp.GetPort())
		if err != nil {
			return err
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return fmt.Errorf("dial %s: %w", addr, err)
		}
		return conn.Close()
	default:
		return fmt.Errorf("health check has no test")
	}
}

func address(ctx context.Context, target Target, port uint32) (string, error) {
	host, err := target.Address(ctx)
	if err != nil {
		return "", fmt.Errorf("replica address: %w", err)
	}
	return net.JoinHostPort(host, strconv.FormatUint(uint64(port), 10)), nil
}

// noRedirects makes a 3xx answer the probe's result (healthy) instead of
// following it somewhere else.
var noRedirects = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func probeHTTP(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("health check request %s: %w", url, err)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return fmt.Errorf("GET %s: status %d", url, resp.StatusCode)
	}
	return nil
}
