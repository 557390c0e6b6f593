package containerd

import (
	"slices"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// cpuPeriod is the CFS period CPU limits are expressed in (100 ms).
const cpuPeriod = 100_000

// nodeFiles are the node's files a replica's container mounts besides its
// spec's mounts and its secrets and configs; "" for each it does without.
type nodeFiles struct {
	// resolvConf and hosts are files in Replica.Dir (etcfiles.go),
	// mounted read-only at /etc/resolv.conf and /etc/hosts.
	resolvConf, hosts string
	// init is the node's init binary (init.go), mounted read-only at
	// InitPath.
	init string
	// volumeMounts are the spec's mounts with volumes resolved to what
	// the container mounts (volumes.go); nil when it mounts no volume.
	volumeMounts []*api.Mount
}

// specOpts turn a replica's service spec into the container's OCI spec:
// the image's config, then the spec's entrypoint and command (processArgs)
// under the init when it asks for one, env plus the JACO_ variables, the
// process options (user, groups, workdir, ulimits), limits, the container
// options (host name, capabilities, sysctls, read-only root, /dev/shm),
// the spec's mounts, the node files (nodeFiles), the replica's secrets and
// configs (fileMounts), and the network namespace made for it.
func specOpts(img client.Image, rep exec.Replica, netnsPath string, files nodeFiles) ([]oci.SpecOpts, error) {
	spec := rep.Task.GetSpec()
	opts := []oci.SpecOpts{
		oci.WithImageConfig(img),
		oci.WithLinuxNamespace(specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: netnsPath}),
	}
	if args := processArgs(spec.GetEntrypoint(), spec.GetCommand()); len(args) > 0 {
		opts = append(opts, oci.WithProcessArgs(args...))
	}
	if files.init != "" {
		opts = append(opts, withInit) // after the args, the image's or the spec's
	}
	opts = append(opts, oci.WithEnv(append(append([]string(nil), spec.GetEnv()...), rep.Env()...)))
	popts, err := processOpts(spec)
	if err != nil {
		return nil, err
	}
	opts = append(opts, popts...)
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
	id, err := containerID(rep.Task.GetId())
	if err != nil {
		return nil, err
	}
	copts, err := containerOpts(spec, id)
	if err != nil {
		return nil, err
	}
	opts = append(opts, copts...)
	mounts := specMounts(files.mountsOf(spec))
	for _, f := range []struct{ src, dest string }{
		{files.resolvConf, "/etc/resolv.conf"}, {files.hosts, "/etc/hosts"}, {files.init, InitPath},
	} {
		if f.src != "" {
			mounts = append(mounts, roFile(f.src, f.dest))
		}
	}
	mounts = append(mounts, fileMounts(rep)...)
	if len(mounts) > 0 {
		opts = append(opts, oci.WithMounts(mounts))
	}
	return opts, nil
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
