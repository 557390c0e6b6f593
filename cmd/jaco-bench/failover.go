package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"sync"
	"time"
)

// failoverResult is one SIGKILL of a leader.
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
	every, timeout time.Duration
	giveUp         time.Duration
	settle         time.Duration
}

// runFailovers kills each system's leader o.kills times, on one cluster
// per system.
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
		if err := waitFor(ctx, 90*time.Second, 100*time.Millisecond, c.healthy); err != nil {
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
		c.kill(li)
		ack, attempts, failed := retryUntilAck(ctx, w, o)
		closeW()
		if ack.IsZero() {
			return out, fmt.Errorf("round %d: no write acknowledged within %s of the kill: %v", round, o.giveUp, failed)
		}
		r.FirstAckMS = float64(ack.Sub(killed)) / 1e6
		r.Attempts, r.FailedBefore = attempts, failed
		if nl, err := c.leader(ctx); err == nil {
			r.NewLeader = c.memberName(nl)
		}

		restarted := time.Now()
		if err := c.restart(li); err != nil {
			return out, err
		}
		if err := waitFor(ctx, 90*time.Second, 50*time.Millisecond, c.healthy); err != nil {
			return out, fmt.Errorf("round %d: %s did not rejoin: %w", round, c.memberName(li), err)
		}
		r.RejoinMS = float64(time.Since(restarted)) / 1e6
		log.Printf("%s failover %2d: killed %s, first ack after %.0f ms (%d attempts), new leader %s, rejoined in %.0f ms",
			sys, round, r.Killed, r.FirstAckMS, r.Attempts, r.NewLeader, r.RejoinMS)
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
