package controlapi

import (
	"fmt"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/manager/backup/backupfile"
)

// WithMinBackupInterval lowers the shortest backup interval accepted
// (default limits.MinBackupInterval), for tests that need several scheduled
// backups in seconds.
func WithMinBackupInterval(d time.Duration) Option {
	return func(s *Server) {
		if d > 0 {
			s.minBackupInterval = d
		}
	}
}

// updateBackupSchedule applies the request's backup settings to c, all or
// none: it reports whether c changed, and sets resp.BackupKey when it drew
// a key. The first schedule turned on gets a key drawn unless the request
// brings one (docs/adr/0037-scheduled-backups.md).
func (s *Server) updateBackupSchedule(c *api.Cluster, req *api.UpdateClusterRequest, resp *api.UpdateClusterResponse) (bool, error) {
	defer func() { resp.BackupSchedule = proto.CloneOf(c.BackupSchedule) }()
	if req.BackupInterval == nil && req.BackupDir == nil && req.BackupKeep == nil && req.BackupKey == nil {
		return false, nil
	}
	sched := proto.CloneOf(c.BackupSchedule)
	if sched == nil {
		sched = &api.BackupSchedule{Keep: limits.DefaultBackupKeep}
	}
	if req.BackupInterval != nil {
		if err := req.BackupInterval.CheckValid(); err != nil {
			return false, invalid("backup interval: %v", err)
		}
		d := req.BackupInterval.AsDuration()
		if d != 0 && (d < s.minBackupInterval || d > limits.MaxBackupInterval) {
			return false, invalid("backup interval %v: give %v to %v, or 0 to turn scheduled backups off", d, s.minBackupInterval, limits.MaxBackupInterval)
		}
		sched.Interval = durationpb.New(d)
	}
	if dir := req.BackupDir; dir != nil {
		if !filepath.IsAbs(*dir) {
			return false, invalid("backup dir %q: give an absolute path (it is a directory on the leader's machine)", *dir)
		}
		sched.Dir = filepath.Clean(*dir)
	}
	if k := req.BackupKeep; k != nil {
		if *k == 0 || *k > limits.MaxBackupKeep {
			return false, invalid("backup keep %d: give 1 to %d", *k, limits.MaxBackupKeep)
		}
		sched.Keep = *k
	}
	on := sched.Interval.AsDuration() > 0
	if on && sched.Dir == "" {
		return false, invalid("scheduled backups need a directory: give --backup-dir DIR")
	}
	key := c.BackupKey
	if ch := req.BackupKey; ch != nil || (on && len(key) == 0) {
		k, drawn, err := backupKey(ch)
		if err != nil {
			return false, err
		}
		key = k[:]
		if drawn {
			resp.BackupKey = k.String()
		}
	}
	if proto.Equal(sched, c.BackupSchedule) && string(key) == string(c.BackupKey) {
		return false, nil
	}
	c.BackupSchedule, c.BackupKey = sched, key
	return true, nil
}

// backupKey is the key a request brings, or a new one (drawn true).
func backupKey(ch *api.BackupKeyChange) (k backupfile.Key, drawn bool, err error) {
	if ch.GetKey() != "" {
		k, err = backupfile.ParseKey(ch.GetKey())
		if err != nil {
			return k, false, invalid("backup key: %v", err)
		}
		return k, false, nil
	}
	k, err = backupfile.NewKey()
	if err != nil {
		return k, false, fmt.Errorf("draw a backup key: %w", err)
	}
	return k, true, nil
}
