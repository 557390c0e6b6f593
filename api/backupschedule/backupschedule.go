// Package backupschedule states the bounds of a scheduled-backup setting, for
// the leader that checks them and the CLI that shows them, which links no
// leader code (docs/adr/0037-scheduled-backups.md).
package backupschedule

import "time"

const (
	// MinInterval is the shortest interval an operator may ask for: each
	// backup holds the whole store in memory on the leader, and a minute
	// is already far below any useful recovery point. Tests lower it with
	// jacod's hidden --min-backup-interval.
	MinInterval = time.Minute
	// MaxInterval is the longest: past a month a schedule is a mistake.
	MaxInterval = 30 * 24 * time.Hour
	// DefaultKeep is how many files a manager keeps when none is said.
	DefaultKeep = 7
	// MaxKeep bounds keep so a typo cannot fill a disk.
	MaxKeep = 1000
)
