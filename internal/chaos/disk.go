package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/jaco-project/jaco/internal/waitfor"
)

// diskSize is each member's filesystem in a full-disk run: room for the
// WAL's preallocated 64 MiB segment and the next one, snapshots and more.
const diskSize = "512m"

// fullDiskFlags snapshot often, so a member whose disk is full must write
// a new file within a second or two (the WAL writes into its preallocated
// segment, which a full disk does not stop).
var fullDiskFlags = []string{"--snapshot-interval", "100"}

// mountDisk mounts a tmpfs of diskSize for the member and moves its data
// dir inside it.
func (m *member) mountDisk(ctx context.Context) error {
	m.disk = m.dir + "-disk"
	if err := os.MkdirAll(m.disk, 0o700); err != nil {
		return fmt.Errorf("disk of %s: %w", m.name, err)
	}
	if out, err := exec.CommandContext(ctx, "mount", "-t", "tmpfs", "-o", "size="+diskSize+",mode=0700", "tmpfs", m.disk).CombinedOutput(); err != nil {
		m.disk = ""
		return fmt.Errorf("mount a tmpfs for %s: %w: %s", m.name, err, strings.TrimSpace(string(out)))
	}
	m.dir = filepath.Join(m.disk, "data")
	m.setArgs()
	return nil
}

// unmountDisk unmounts the member's filesystem, if it has one; the
// daemon must be gone.
func (m *member) unmountDisk(ctx context.Context) error {
	if m.disk == "" {
		return nil
	}
	if out, err := exec.CommandContext(ctx, "umount", m.disk).CombinedOutput(); err != nil {
		return fmt.Errorf("unmount %s's disk: %w: %s", m.name, err, strings.TrimSpace(string(out)))
	}
	m.disk = ""
	return nil
}

// fillPath is the file that fills a member's disk.
func (m *member) fillPath() string { return filepath.Join(m.disk, "fill") }

// fill writes zeros to the member's disk until no space is left.
func (m *member) fill() error {
	f, err := os.OpenFile(m.fillPath(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("fill %s's disk: %w", m.name, err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for {
		if _, err := f.Write(chunk); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return nil
			}
			return fmt.Errorf("fill %s's disk: %w", m.name, err)
		}
	}
}

// fullDiskFollower fills a follower's disk. The follower may fail its
// writes or stop (fail-stop is safe); what it must not do is acknowledge
// what it could not store. Healing frees the space and, if the daemon
// exited, starts it again.
func fullDiskFollower(ctx context.Context, c *cluster, rng *rand.Rand) (fault, error) {
	l, err := c.leader(ctx)
	if err != nil {
		return fault{}, err
	}
	i := followers(c, l, rng)[0]
	m := c.members[i]
	m.allowExit()
	if err := m.fill(); err != nil {
		return fault{}, err
	}
	exited := ""
	return fault{
		what: "fill the disk of " + m.name,
		heal: func(ctx context.Context) error {
			if err := os.Remove(m.fillPath()); err != nil {
				return fmt.Errorf("free %s's disk: %w", m.name, err)
			}
			// A daemon that failed on the full disk may still be on its
			// way out: wait until it either answers or is gone.
			err := waitfor.Until(ctx, stopTimeout, waitPoll, func(context.Context) error {
				if !m.running() {
					return nil
				}
				_, err := c.askStatus(ctx, i)
				return err
			})
			if m.running() {
				if err != nil {
					return fmt.Errorf("%s neither answers nor exits once its disk has space again: %w", m.name, err)
				}
				return nil
			}
			exited = fmt.Sprintf("; %s exited (%v), restarted", m.name, m.p.ExitErr())
			return m.start(ctx)
		},
		after: func() string { return exited },
	}, nil
}
