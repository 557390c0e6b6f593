package limits

import "time"

// The bounds of a scheduled-backup setting, for the leader that checks
// them and the CLI that shows them, which links no leader code
// (docs/adr/0037-scheduled-backups.md).
const (
	// MinBackupInterval is the shortest interval an operator may ask for:
	// each backup holds the whole store in memory on the leader, and a
	// minute is already far below any useful recovery point. Tests lower
	// it with jacod's hidden --min-backup-interval.
	MinBackupInterval = time.Minute
	// MaxBackupInterval is the longest: past a month a schedule is a
	// mistake.
	MaxBackupInterval = 30 * 24 * time.Hour
	// DefaultBackupKeep is how many files a manager keeps when none is
	// said.
	DefaultBackupKeep = 7
	// MaxBackupKeep bounds keep so a typo cannot fill a disk.
	MaxBackupKeep = 1000
)
