package backup

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
	"github.com/jaco-project/jaco/manager/state/store"
)

// maxRetryDelay bounds the wait before a failed scheduled backup is tried
// again (it is the interval when that is shorter).
const maxRetryDelay = time.Minute

// Scheduler writes the cluster's scheduled backups while this manager
// leads (docs/adr/0037-scheduled-backups.md). The manager runs it as a
// leader subsystem, so one manager writes at a time; it continues the
// schedule from the last success the store records, so a new leader
// neither repeats a backup nor writes a burst of missed ones.
type Scheduler struct {
	server  *Server
	store   *store.Store
	nodeID  string
	log     *slog.Logger
	metrics *schedulerMetrics
}

// NewScheduler returns a scheduler taking backups through srv on the
// manager whose node id is nodeID.
func NewScheduler(srv *Server, st *store.Store, nodeID string, log *slog.Logger) *Scheduler {
	return &Scheduler{server: srv, store: st, nodeID: nodeID, log: log, metrics: newSchedulerMetrics()}
}

// Run writes backups when they fall due until ctx ends (leadership went).
func (s *Scheduler) Run(ctx context.Context) {
	var c *api.Cluster
	changes := s.store.ViewAndWatch(ctx, func(tx store.ReadTx) { c = tx.Cluster() }, store.ObjectType[*api.Cluster]())
	timer := time.NewTimer(0)
	timer.Stop()
	defer timer.Stop()
	var lastAttempt time.Time
	for {
		if due, on := nextAttempt(c, lastAttempt); on {
			wait := time.Until(due)
			if wait <= 0 {
				lastAttempt = time.Now()
				s.attempt(ctx, c)
				c = s.cluster()
				continue
			}
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changes:
			if !ok {
				return
			}
			c = s.cluster()
		case <-timer.C:
		}
		timer.Stop()
	}
}

func (s *Scheduler) cluster() *api.Cluster {
	var c *api.Cluster
	s.store.View(func(tx store.ReadTx) { c = tx.ClusterShared() })
	return c
}

// nextAttempt is when the next backup falls due: an interval after the
// last success (at once when there was none), and after a failure, or an
// attempt of this manager's that could not be recorded, not before the
// retry delay. on is false while the schedule is off.
func nextAttempt(c *api.Cluster, lastAttempt time.Time) (due time.Time, on bool) {
	interval := c.GetBackupSchedule().GetInterval().AsDuration()
	if interval <= 0 {
		return time.Time{}, false
	}
	rec := c.GetLastBackup()
	if t := rec.GetLastSuccessAt(); t != nil {
		due = t.AsTime().Add(interval)
	}
	retry := min(interval, maxRetryDelay)
	if t := rec.GetLastFailureAt(); t != nil {
		due = later(due, t.AsTime().Add(retry))
	}
	if !lastAttempt.IsZero() {
		due = later(due, lastAttempt.Add(retry))
	}
	return due, true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// attempt writes one backup and records the outcome in the store. An
// attempt cut short by the end of leadership is not recorded: the next
// leader's schedule sees the last success and writes one.
func (s *Scheduler) attempt(ctx context.Context, c *api.Cluster) {
	path, b, err := s.write(ctx, c)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		s.metrics.failures.Inc()
		s.log.Warn("scheduled backup failed", "err", err)
	} else {
		s.log.Info("scheduled backup written", "file", path, "index", b.Index)
	}
	if rerr := s.record(ctx, path, b, err); rerr != nil && ctx.Err() == nil {
		s.log.Warn("record the scheduled backup's outcome", "err", rerr)
	}
}

// write takes a backup on this leader, seals it with the cluster's backup
// key into the schedule's directory and prunes the directory to keep.
func (s *Scheduler) write(ctx context.Context, c *api.Cluster) (string, *backupfile.Backup, error) {
	var key backupfile.Key
	if len(c.GetBackupKey()) != len(key) {
		return "", nil, fmt.Errorf("the cluster has no backup key: run jaco cluster update --rotate-backup-key")
	}
	copy(key[:], c.GetBackupKey())
	b, err := s.server.Take(ctx)
	if err != nil {
		return "", nil, err
	}
	payload, err := b.Marshal()
	if err != nil {
		return "", nil, err
	}
	sealed, err := backupfile.Seal(payload, key)
	if err != nil {
		return "", nil, err
	}
	sched := c.GetBackupSchedule()
	path, err := writeFile(sched.GetDir(), FileName(b.ClusterID, b.TakenAt, b.Index), sealed)
	if err != nil {
		return "", nil, err
	}
	removed, err := prune(sched.GetDir(), b.ClusterID, int(max(sched.GetKeep(), 1)))
	if len(removed) > 0 {
		s.log.Info("pruned old scheduled backups", "files", removed)
	}
	if err != nil {
		// The backup is written; an old file left over is no reason to
		// report it failed.
		s.log.Warn("prune old scheduled backups", "err", err)
	}
	return path, b, nil
}

// recordAttempts bounds the retries of a record that a concurrent write to
// the Cluster object (a cluster update) got ahead of.
const recordAttempts = 5

// record stores the outcome: a success replaces the record, a failure is
// added to the last success.
func (s *Scheduler) record(ctx context.Context, path string, b *backupfile.Backup, failed error) error {
	return s.store.UpdateRetrying(ctx, recordAttempts, func(tx *store.Tx) error {
		c := tx.Cluster()
		if c == nil {
			return fmt.Errorf("the cluster object is missing")
		}
		rec := c.LastBackup
		if rec == nil {
			rec = &api.BackupRecord{}
		}
		if failed != nil {
			rec.LastFailureAt, rec.LastFailure, rec.LastFailureNodeId = timestamppb.Now(), failed.Error(), s.nodeID
		} else {
			rec = &api.BackupRecord{LastSuccessAt: timestamppb.New(b.TakenAt), LastSuccessFile: path,
				LastSuccessIndex: b.Index, LastSuccessNodeId: s.nodeID}
		}
		c.LastBackup = rec
		return tx.Update(c)
	})
}
