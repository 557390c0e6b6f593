package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/jaco-project/jaco/internal/waitfor"
)

// failoverResult is one leader lost: SIGKILLed, or paused with SIGSTOP.
type failoverResult struct {
	System       string         `json:"system"`
	Round        int            `json:"round"`
	Killed       string         `json:"killed"`
	NewLeader    string         `json:"new_leader"`
	FirstAckMS   float64        `json:"kill_to_first_ack_ms"`
	Attempts     int            `json:"attempts"`
	FailedBefore map[string]int `json:"failed_attempts"`
	RejoinMS     float64        `json:"restart_to_healthy_ms"`
}

type failoverOpts struct {
	systems        []string
	kills          int
	fault          fault
	every, timeout time.Duration
	giveUp         time.Duration
	settle         time.Duration
}

// fault is how the benchmark takes the leader away.
type fault string

const (
	// faultKill SIGKILLs the leader, then restarts it: the kernel closes
	// its sockets, so its peers see their connections break.
	faultKill fault = "kill"
	// faultPause SIGSTOPs the leader, then SIGCONTs it: its sockets stay
	// open and say nothing, as a leader's hung process or vanished machine
	// would, so only the election timeout finds it gone.
	faultPause fault = "pause"
)

func parseFault(s string) (fault, error) {
	switch f := fault(s); f {
	case faultKill, faultPause:
		return f, nil
	}
	return "", fmt.Errorf("unknown fault %q (want kill or pause)", s)
}

// what names the fault's signal in reports.
func (f fault) what() string {
	if f == faultPause {
		return "SIGSTOP"
	}
	return "SIGKILL"
}

// back names how the member comes back in reports.
func (f fault) back() string {
	if f == faultPause {
		return "SIGCONT"
	}
	return "restart"
}

// take takes member i of c away, as f says.
func (f fault) take(c cluster, i int) error {
	if f == faultKill {
		c.kill(i)
		return nil
	}
	return signalMember(c, i, syscall.SIGSTOP)
}

// bringBack brings member i of c back after take.
func (f fault) bringBack(c cluster, i int) error {
	if f == faultKill {
		return c.restart(i)
	}
	return signalMember(c, i, syscall.SIGCONT)
}

// signalMember sends sig to member i and returns at once: a pause is
// timed from the signal, not from the kernel showing it acted.
func signalMember(c cluster, i int, sig syscall.Signal) error {
	if err := c.proc(i).Signal(sig); err != nil {
		return fmt.Errorf("%s to %s: %w", sig, c.memberName(i), err)
	}
	return nil
}

// runFailovers takes each system's leader away o.kills times (o.fault),
// on one cluster per system.
func runFailovers(ctx context.Context, env *env, o failoverOpts) ([]*failoverResult, error) {
	var out []*failoverResult
	for _, sys := range o.systems {
		root := filepath.Join(env.work, "failover-"+sys)
		rs, err := runFailover(ctx, env, sys, root, o)
		out = append(out, rs...)
		if err != nil {
			return out, fmt.Errorf("%s failover: %w", sys, err)
		}
		if err := env.cleanup(root); err != nil {
			return out, err
		}
	}
	return out, nil
}

func runFailover(ctx context.Context, env *env, sys, root string, o failoverOpts) ([]*failoverResult, error) {
	c, err := env.newCluster(ctx, sys, root)
	if err != nil {
		return nil, err
	}
	defer c.close()
	var out []*failoverResult
	for round := 1; round <= o.kills; round++ {
		if err := waitfor.Until(ctx, 90*time.Second, 100*time.Millisecond, c.healthy); err != nil {
			return out, fmt.Errorf("round %d: cluster not healthy: %w", round, err)
		}
		select {
		case <-time.After(o.settle):
		case <-ctx.Done():
			return out, ctx.Err()
		}
		li, err := c.leader(ctx)
		if err != nil {
			return out, err
		}
		w, closeW, err := c.failoverWriter(ctx, li)
		if err != nil {
			return out, err
		}
		r := &failoverResult{System: sys, Round: round, Killed: c.memberName(li), FailedBefore: make(map[string]int)}
		killed := time.Now()
		if err := o.fault.take(c, li); err != nil {
			closeW()
			return out, err
		}
		ack, attempts, failed := retryUntilAck(ctx, w, o)
		closeW()
		if ack.IsZero() {
			// A paused member left so would hold the cluster's stop.
			_ = o.fault.bringBack(c, li)
			return out, fmt.Errorf("round %d: no write acknowledged within %s of the %s: %v", round, o.giveUp, o.fault.what(), failed)
		}
		r.FirstAckMS = float64(ack.Sub(killed)) / 1e6
		r.Attempts, r.FailedBefore = attempts, failed

		restarted := time.Now()
		if err := o.fault.bringBack(c, li); err != nil {
			return out, err
		}
		if err := waitfor.Until(ctx, 90*time.Second, 50*time.Millisecond, c.healthy); err != nil {
			return out, fmt.Errorf("round %d: %s did not rejoin: %w", round, c.memberName(li), err)
		}
		r.RejoinMS = float64(time.Since(restarted)) / 1e6
		// Asked once the member is back: a paused one answers no status
		// call, and every member must agree on the leader.
		if nl, err := c.leader(ctx); err == nil {
			r.NewLeader = c.memberName(nl)
		}
		log.Printf("%s failover %2d: %s to %s, first ack after %.0f ms (%d attempts), new leader %s, rejoined in %.0f ms",
			sys, round, o.fault.what(), r.Killed, r.FirstAckMS, r.Attempts, r.NewLeader, r.RejoinMS)
		out = append(out, r)
	}
	return out, nil
}

// retryUntilAck starts a write every o.every, each with o.timeout, until
// one is acknowledged or o.giveUp passes, and returns when the first was
// acknowledged. Attempts still in flight then are cancelled.
func retryUntilAck(ctx context.Context, w writeFunc, o failoverOpts) (time.Time, int, map[string]int) {
	ctx, cancel := context.WithTimeout(ctx, o.giveUp)
	defer cancel()
	acked := make(chan time.Time, 1)
	var mu sync.Mutex
	failed := make(map[string]int)
	var wg sync.WaitGroup
	defer wg.Wait()
	t := time.NewTicker(o.every)
	defer t.Stop()
	attempts := 0
	for {
		attempts++
		wg.Add(1)
		go func() {
			defer wg.Done()
			actx, acancel := context.WithTimeout(ctx, o.timeout)
			defer acancel()
			if err := w(actx); err != nil {
				if ctx.Err() == nil {
					mu.Lock()
					failed[errWord(err)]++
					mu.Unlock()
				}
				return
			}
			select {
			case acked <- time.Now():
			default:
			}
		}()
		select {
		case at := <-acked:
			cancel()
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			return at, attempts, failed
		case <-ctx.Done():
			wg.Wait()
			mu.Lock()
			defer mu.Unlock()
			return time.Time{}, attempts, failed
		case <-t.C:
		}
	}
}
