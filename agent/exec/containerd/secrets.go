package containerd

import (
	"fmt"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/jaco-project/jaco/agent/exec"
)

// A replica's secrets and configs (exec.File) live in a tmpfs of its own
// on the node, under Replica.Dir (exec.Replica.WriteFiles): secrets never
// touch a disk, neither the node's nor the container's snapshot. Each
// file is bind-mounted read-only at its path in the container, secrets
// at /run/secrets/TARGET, configs at their absolute targets. The tmpfs is
// made by Prepare (again when it is gone, as after an agent restart
// before the replica started), taken away when Prepare fails, and
// unmounted by Remove once the container's processes are gone; a running
// container holds its own mounts of the files, so an agent restart does
// not touch what it sees.

// prepareFiles refuses a replica whose secrets or configs did not all
// reach the node, then writes them to its tmpfs.
func (c *controller) prepareFiles() error {
	if err := c.rep.CheckFiles(); err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	if err := c.rep.WriteFiles(); err != nil {
		return fmt.Errorf("replica %s: %w", c.id, err)
	}
	return nil
}

// fileMounts are the bind mounts of the replica's files into its
// container: read-only, and nothing on them runs or opens a device.
func fileMounts(rep exec.Replica) []specs.Mount {
	var mounts []specs.Mount
	for _, f := range rep.Files {
		mounts = append(mounts, specs.Mount{
			Destination: f.Path,
			Type:        "bind",
			Source:      rep.HostPath(f),
			Options:     []string{"rbind", "rprivate", "ro", "nosuid", "nodev", "noexec"},
		})
	}
	return mounts
}
