package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/limits"
	"github.com/jaco-project/jaco/internal/secretinput"
)

// backupFlags are cluster update's scheduled-backup settings
// (docs/adr/0037-scheduled-backups.md).
type backupFlags struct {
	interval time.Duration
	dir      string
	keep     uint32
	keyStdin bool
	rotate   bool
}

func (f *backupFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.DurationVar(&f.interval, "backup-interval", 0,
		fmt.Sprintf("write a sealed backup this often on the leader, %v to %v; 0 turns scheduled backups off", limits.MinBackupInterval, limits.MaxBackupInterval))
	fl.StringVar(&f.dir, "backup-dir", "", "absolute directory on the leader's machine scheduled backups go into (made 0700 if missing)")
	fl.Uint32Var(&f.keep, "backup-keep", 0, fmt.Sprintf("scheduled backups each manager keeps in --backup-dir, 1 to %d (default %d)", limits.MaxBackupKeep, limits.DefaultBackupKeep))
	fl.BoolVar(&f.keyStdin, "backup-key-stdin", false, "seal scheduled backups with a backup key read from stdin (JBK1-...) instead of a new random one")
	fl.BoolVar(&f.rotate, "rotate-backup-key", false, "replace the scheduled backups' key with a new one, printed once (older files keep opening with the old key only)")
}

// apply puts the flags given into req; reading the key is the only thing
// that can fail.
func (f *backupFlags) apply(cmd *cobra.Command, req *api.UpdateClusterRequest) error {
	fl := cmd.Flags()
	if fl.Changed("backup-interval") {
		req.BackupInterval = durationpb.New(f.interval)
	}
	if fl.Changed("backup-dir") {
		req.BackupDir = &f.dir
	}
	if fl.Changed("backup-keep") {
		req.BackupKeep = &f.keep
	}
	switch {
	case f.keyStdin:
		k, err := secretinput.BackupKey(cmd.InOrStdin(), cmd.ErrOrStderr())
		if err != nil {
			return fmt.Errorf("--backup-key-stdin: %w", err)
		}
		req.BackupKey = &api.BackupKeyChange{Key: k.String()}
	case f.rotate:
		req.BackupKey = &api.BackupKeyChange{}
	}
	return nil
}

// asksBackups: req changes a scheduled-backup setting.
func asksBackups(req *api.UpdateClusterRequest) bool {
	return req.BackupInterval != nil || req.BackupDir != nil || req.BackupKeep != nil || req.BackupKey != nil
}

// print shows the schedule in force and a key the call drew, once.
func (f *backupFlags) print(out io.Writer, resp *api.UpdateClusterResponse, quiet bool) {
	if quiet {
		if resp.BackupKey != "" {
			fmt.Fprintln(out, resp.BackupKey)
		}
		return
	}
	fmt.Fprintf(out, "Scheduled backups: %s.\n", describeSchedule(resp.BackupSchedule))
	if resp.BackupKey != "" {
		fmt.Fprintf(out, "\nBackup key (shown only now; keep it apart from the backup files; 'jaco restore FILE' reads it from stdin or a prompt):\n\n    %s\n", resp.BackupKey)
	}
}

func describeSchedule(s *api.BackupSchedule) string {
	iv := s.GetInterval().AsDuration()
	if iv <= 0 {
		if s.GetDir() == "" {
			return "off"
		}
		return fmt.Sprintf("off (directory %s, keep %d when turned on)", s.GetDir(), s.GetKeep())
	}
	return fmt.Sprintf("every %v into %s on the leader's machine, keeping the newest %d", iv, s.GetDir(), s.GetKeep())
}

// backupView is the scheduled backups part of `cluster status --format json`.
type backupView struct {
	Interval string `json:"interval"`
	Dir      string `json:"dir,omitempty"`
	Keep     uint32 `json:"keep,omitempty"`
	// LastSuccess* describe the last scheduled backup written.
	LastSuccessAt    *time.Time `json:"last_success_at,omitempty"`
	LastSuccessFile  string     `json:"last_success_file,omitempty"`
	LastSuccessIndex uint64     `json:"last_success_index,omitempty"`
	LastSuccessNode  string     `json:"last_success_node_id,omitempty"`
	// LastFailure* are set when the newest attempt failed.
	LastFailureAt   *time.Time `json:"last_failure_at,omitempty"`
	LastFailure     string     `json:"last_failure,omitempty"`
	LastFailureNode string     `json:"last_failure_node_id,omitempty"`
}

func toBackupView(resp *api.ClusterStatusResponse) *backupView {
	if resp.BackupSchedule == nil && resp.LastBackup == nil {
		return nil
	}
	s, r := resp.BackupSchedule, resp.LastBackup
	v := &backupView{Interval: s.GetInterval().AsDuration().String(), Dir: s.GetDir(), Keep: s.GetKeep(),
		LastSuccessFile: r.GetLastSuccessFile(), LastSuccessIndex: r.GetLastSuccessIndex(), LastSuccessNode: r.GetLastSuccessNodeId(),
		LastFailure: r.GetLastFailure(), LastFailureNode: r.GetLastFailureNodeId()}
	if t := r.GetLastSuccessAt(); t != nil {
		at := t.AsTime()
		v.LastSuccessAt = &at
	}
	if t := r.GetLastFailureAt(); t != nil {
		at := t.AsTime()
		v.LastFailureAt = &at
	}
	return v
}

func printBackupStatus(out io.Writer, v *backupView, schedule *api.BackupSchedule) {
	if v == nil {
		return
	}
	fmt.Fprintf(out, "Backups:     %s\n", terminalSafe(describeSchedule(schedule)))
	if v.LastSuccessAt != nil {
		fmt.Fprintf(out, "             last success %s (%s ago): %s at raft index %d, written by %s\n",
			v.LastSuccessAt.UTC().Format(time.RFC3339), time.Since(*v.LastSuccessAt).Round(time.Second),
			terminalSafe(v.LastSuccessFile), v.LastSuccessIndex, v.LastSuccessNode)
	} else {
		fmt.Fprintln(out, "             no scheduled backup written yet")
	}
	if v.LastFailureAt != nil {
		fmt.Fprintf(out, "             LAST ATTEMPT FAILED %s on %s: %s\n",
			v.LastFailureAt.UTC().Format(time.RFC3339), v.LastFailureNode, terminalSafe(v.LastFailure))
	}
}
