package containerd

import (
	"slices"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/jaco-project/jaco/agent/exec"
)

// cpuPeriod is the CFS period CPU limits are expressed in (100 ms).
const cpuPeriod = 100_000

// specOpts turn a replica's service spec into the container's OCI spec:
// the image's config, then the spec's entrypoint and command (processArgs),
// env plus the JACO_ variables, limits, bind mounts, the replica's
// secrets and configs (fileMounts), the network namespace made for it
// and, for a replica on overlay networks, its resolv.conf (a file in
// Replica.Dir) read-only at /etc/resolv.conf.
func specOpts(img client.Image, rep exec.Replica, netnsPath, resolvConf string) []oci.SpecOpts {
	spec := rep.Task.GetSpec()
	opts := []oci.SpecOpts{
		oci.WithImageConfig(img),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netnsPath}),
	}
	if args := processArgs(spec.GetEntrypoint(), spec.GetCommand()); len(args) > 0 {
		opts = append(opts, oci.WithProcessArgs(args...))
	}
	opts = append(opts, oci.WithEnv(append(append([]string(nil), spec.GetEnv()...), rep.Env()...)))
	if mem := spec.GetLimits().GetMemoryBytes(); mem > 0 {
		opts = append(opts, oci.WithMemoryLimit(uint64(mem)))
	}
	if nano := spec.GetLimits().GetNanoCpus(); nano > 0 {
		quota := nano * cpuPeriod / 1e9
		if quota < 1000 { // the kernel's minimum quota is 1 ms
			quota = 1000
		}
		opts = append(opts, oci.WithCPUCFS(quota, cpuPeriod))
	}
	var mounts []specs.Mount
	for _, m := range spec.GetMounts() {
		mode := "rw"
		if m.GetReadonly() {
			mode = "ro"
		}
		mounts = append(mounts, specs.Mount{
			Destination: m.GetTarget(),
			Type:        "bind",
			Source:      m.GetSource(),
			Options:     []string{"rbind", "rprivate", mode},
		})
	}
	if resolvConf != "" {
		mounts = append(mounts, specs.Mount{
			Destination: "/etc/resolv.conf",
			Type:        "bind",
			Source:      resolvConf,
			Options:     []string{"rbind", "rprivate", "ro"},
		})
	}
	mounts = append(mounts, fileMounts(rep)...)
	if len(mounts) > 0 {
		opts = append(opts, oci.WithMounts(mounts))
	}
	return opts
}

// processArgs are the container's argv when the spec sets one: its
// entrypoint followed by its command (the image's command is dropped, as
// Docker and compose do), or, without an entrypoint, its command alone in
// place of the image's entrypoint and command (jaco's -- CMD). nil keeps
// the image's.
func processArgs(entrypoint, command []string) []string {
	if len(entrypoint) > 0 {
		return append(slices.Clone(entrypoint), command...)
	}
	if len(command) > 0 {
		return command
	}
	return nil
}
