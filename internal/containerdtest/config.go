package containerdtest

import (
	"fmt"
	"path/filepath"
	"strconv"
)

// configTOML is the daemon's config (version 2, read by containerd 1.6 and
// 1.7): everything under dir, no CRI plugin (it would want its own CNI
// setup and image service), no debug or metrics listener.
func configTOML(dir, address string) string {
	q := strconv.Quote
	return fmt.Sprintf(`version = 2
root = %s
state = %s
disabled_plugins = [
  "io.containerd.grpc.v1.cri",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = %s

[ttrpc]
  address = %s

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""
`, q(filepath.Join(dir, "root")), q(filepath.Join(dir, "state")), q(address), q(address+".ttrpc"))
}
