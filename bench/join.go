package main

import (
	"context"
	"fmt"
	"log"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/datadir"
	"github.com/jaco-project/jaco/internal/waitfor"
)

// joinResult is one third manager joining a two-manager cluster.
type joinResult struct {
	Round int `json:"round"`
	// JoinCmdMS is how long `jaco node join` took to return.
	JoinCmdMS float64 `json:"join_cmd_ms"`
	// VoterMS is from starting `jaco node join` on m3 until the leader
	// lists m3 as a VOTER.
	VoterMS float64 `json:"join_to_voter_ms"`
	// M2VoterMS is from the same start until m2, the nonvoter of the
	// two-manager cluster, is a VOTER.
	M2VoterMS float64 `json:"join_to_m2_voter_ms"`
	// Order is the order the two were promoted in.
	Order string `json:"order"`
}

type joinOpts struct {
	rounds int
	// settle is how long m2 has been a member before m3 joins, past
	// PromoteAfter, so that m2 is eligible as in a cluster that has run
	// for a while.
	settle time.Duration
}

// runJoins forms m1 + m2 (two managers: one voter), then times m3's
// `jaco node join` until the leader shows m3 as a VOTER, with a fresh
// cluster each round.
func runJoins(ctx context.Context, env *env, o joinOpts) ([]*joinResult, error) {
	var out []*joinResult
	for round := 1; round <= o.rounds; round++ {
		root := filepath.Join(env.work, fmt.Sprintf("join-%d", round))
		r, err := runJoin(ctx, env, root, o)
		if err != nil {
			return out, fmt.Errorf("join round %d: %w", round, err)
		}
		r.Round = round
		log.Printf("join %d: `jaco node join` took %.0f ms; m3 VOTER after %.0f ms, m2 VOTER after %.0f ms (%s)",
			round, r.JoinCmdMS, r.VoterMS, r.M2VoterMS, r.Order)
		out = append(out, r)
		if err := env.cleanup(root); err != nil {
			return out, err
		}
	}
	return out, nil
}

func runJoin(ctx context.Context, env *env, root string, o joinOpts) (*joinResult, error) {
	c, err := startJacods(ctx, env.jaco, root, 3, false)
	if err != nil {
		return nil, err
	}
	defer c.close()
	m1, m2, m3 := c.members[0], c.members[1], c.members[2]
	if err := c.init(ctx); err != nil {
		return nil, err
	}
	tok, err := c.joinToken(ctx, m1, api.NodeRole_NODE_ROLE_MANAGER)
	if err != nil {
		return nil, err
	}
	if err := c.cliJoin(ctx, m2, m1.addr, tok); err != nil {
		return nil, err
	}
	if err := c.learnNodeID(ctx, m2); err != nil {
		return nil, err
	}
	select {
	case <-time.After(o.settle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	tok, err = c.joinToken(ctx, m1, api.NodeRole_NODE_ROLE_MANAGER)
	if err != nil {
		return nil, err
	}

	r := &joinResult{}
	start := time.Now()
	if err := c.cliJoin(ctx, m3, m1.addr, tok); err != nil {
		return nil, err
	}
	r.JoinCmdMS = ms(time.Since(start))
	cl, err := client.New(client.WithSocket(datadir.Dir(m1.dir).Socket()), client.WithoutRetry())
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// Poll the leader (m1: nothing else has led this cluster) every 20 ms.
	err = waitfor.Until(ctx, 60*time.Second, 20*time.Millisecond, func(ctx context.Context) error {
		s, err := cl.Cluster.Status(ctx, &api.ClusterStatusRequest{})
		if err != nil {
			return err
		}
		now := ms(time.Since(start))
		for _, m := range s.Members {
			if m.Suffrage != api.Suffrage_SUFFRAGE_VOTER {
				continue
			}
			switch m.Hostname {
			case "m2":
				if r.M2VoterMS == 0 {
					r.M2VoterMS = now
					r.Order += "m2 "
				}
			case "m3":
				if r.VoterMS == 0 {
					r.VoterMS = now
					r.Order += "m3 "
				}
			}
		}
		if r.VoterMS == 0 || r.M2VoterMS == 0 {
			return fmt.Errorf("m2 voter after %v ms, m3 after %v ms", r.M2VoterMS, r.VoterMS)
		}
		return nil
	})
	r.Order = strings.TrimSpace(r.Order)
	return r, err
}

// cliJoin runs `jaco --data-dir DIR node join --peer PEER --token T`.
func (c *jacoCluster) cliJoin(ctx context.Context, m *jacoMember, peer, tok string) error {
	cmd := exec.CommandContext(ctx, c.bins.jaco, "--data-dir", m.dir, "node", "join", "--peer", peer, "--token", tok)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("jaco node join (%s): %w: %s", m.name, err, out)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
