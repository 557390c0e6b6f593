package controlapi

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/manager/apierror"
	"github.com/jaco-project/jaco/manager/encryption"
	"github.com/jaco-project/jaco/manager/state/store"
)

// UpdateCluster turns autolock on or off, rotates the unlock key, sets
// the cluster-wide limits, whether a node's joining or return rebalances
// the services (docs/adr/0040), the graces of lost nodes (docs/adr/0042)
// and the backup schedule (docs/adr/0037). The managers see an autolock change in the
// store and re-seal their own files (node/keyring); turning autolock
// on also makes each of them rotate its data key. A key this call creates
// is in the response, once. A limit holds for the requests that come
// after it; what exists stays (docs/adr/0022).
func (s *Server) UpdateCluster(ctx context.Context, req *api.UpdateClusterRequest) (*api.UpdateClusterResponse, error) {
	var resp *api.UpdateClusterResponse
	err := s.update(ctx, func(tx *store.Tx) error {
		resp = &api.UpdateClusterResponse{}
		c := tx.Cluster()
		if c == nil {
			return reason.Error(codes.FailedPrecondition, reason.ClusterUninitialized, "the cluster object is missing")
		}
		newKey := func() error {
			k, err := encryption.NewKey()
			if err != nil {
				return err
			}
			c.UnlockKey = k[:]
			resp.UnlockKey = encryption.FormatUnlockKey(k)
			return nil
		}
		changed := false
		if req.Autolock != nil && *req.Autolock != c.Autolock {
			changed = true
			c.Autolock = *req.Autolock
			c.PreviousUnlockKey = nil
			c.UnlockKey = nil
			if c.Autolock {
				if err := newKey(); err != nil {
					return err
				}
			}
		}
		if req.RotateUnlockKey {
			if !c.Autolock {
				return invalid("autolock is off: there is no unlock key to rotate (jaco cluster update --autolock=true)")
			}
			if resp.UnlockKey == "" { // a key made by this call is not rotated again
				changed = true
				c.PreviousUnlockKey = c.UnlockKey
				if err := newKey(); err != nil {
					return err
				}
			}
		}
		if n := req.MaxReplicasPerService; n != nil {
			if *n == 0 || *n > limits.MaxReplicasCeiling {
				return invalid("max_replicas_per_service %d: give 1 to %d", *n, limits.MaxReplicasCeiling)
			}
			if *n != c.MaxReplicasPerService {
				changed = true
				c.MaxReplicasPerService = *n
			}
		}
		if n := req.MaxServices; n != nil {
			if *n == 0 || *n > limits.MaxServicesCeiling {
				return invalid("max_services %d: give 1 to %d", *n, limits.MaxServicesCeiling)
			}
			if *n != c.MaxServices {
				changed = true
				c.MaxServices = *n
			}
		}
		for _, g := range []struct {
			name string
			in   *durationpb.Duration
			to   **durationpb.Duration
		}{{"partition_grace", req.PartitionGrace, &c.PartitionGrace}, {"down_grace", req.DownGrace, &c.DownGrace}} {
			if g.in == nil {
				continue
			}
			if d := g.in.AsDuration(); !g.in.IsValid() || d < 0 || d > maxNodeGrace {
				return invalid("%s %s: give 0 to %s", g.name, d, maxNodeGrace)
			}
			if !proto.Equal(g.in, *g.to) {
				changed = true
				*g.to = g.in
			}
		}
		if v := req.RebalanceOnJoin; v != nil && *v != c.RebalanceOnJoin {
			changed = true
			c.RebalanceOnJoin = *v
		}
		backupChanged, err := s.updateBackupSchedule(c, req, resp)
		if err != nil {
			return err
		}
		changed = changed || backupChanged
		resp.Autolock = c.Autolock
		resp.RebalanceOnJoin = c.RebalanceOnJoin
		resp.PartitionGrace = durationpb.New(api.PartitionGraceOf(c))
		resp.DownGrace = durationpb.New(api.DownGraceOf(c))
		resp.MaxReplicasPerService = limits.MaxReplicasPerService(c)
		resp.MaxServices = limits.MaxServices(c)
		if !changed {
			return nil
		}
		return tx.Update(c)
	})
	if err != nil {
		return nil, apierror.ToStatus(err)
	}
	return resp, nil
}

// GetUnlockKey shows the current unlock key, and the previous one for
// managers that were down when it was rotated.
func (s *Server) GetUnlockKey(context.Context, *api.GetUnlockKeyRequest) (*api.GetUnlockKeyResponse, error) {
	var c *api.Cluster
	s.store.View(func(tx store.ReadTx) { c = tx.Cluster() })
	if c == nil {
		return nil, reason.Error(codes.FailedPrecondition, reason.ClusterUninitialized, "the cluster object is missing")
	}
	resp := &api.GetUnlockKeyResponse{Autolock: c.Autolock}
	if k, ok := keyOf(c.UnlockKey); ok {
		resp.UnlockKey = encryption.FormatUnlockKey(k)
	}
	if k, ok := keyOf(c.PreviousUnlockKey); ok {
		resp.PreviousUnlockKey = encryption.FormatUnlockKey(k)
	}
	return resp, nil
}

// keyOf reads a key stored in the cluster object.
func keyOf(b []byte) (encryption.Key, bool) {
	var k encryption.Key
	if len(b) != len(k) {
		return k, false
	}
	copy(k[:], b)
	return k, true
}

// maxNodeGrace bounds the graces of lost nodes: a day is past any
// partition worth waiting out.
const maxNodeGrace = 24 * time.Hour
