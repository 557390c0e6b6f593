// Package hooks is the runtime for process services: a replica is a bundle
// of executables (prepare, launch, finish, cleanup; only launch is
// required) run as plain processes on the node.
//
// Contract, per replica (all state lives in Replica.Dir):
//
//   - Prepare writes the bundle to Dir/bundle (mode 0755) and runs prepare,
//     tried up to the bundle's prepare_start_limit times (default 10).
//   - Start runs launch under a shim: the jacod binary itself, run as
//     "jacod hook-shim DIR" (see ShimCommand and ShimMain). The shim
//     detaches into its own session, so it and launch survive jacod
//     exiting, and it is the only process that waits for launch. It
//     records its own and launch's pid with their start times (so a reused
//     pid is never mistaken for them) and, at the end, launch's exit in
//     Dir, each file written atomically. A Controller made later for the
//     same replica (jacod restarted) reads those files: Start returns
//     exec.ErrAlreadyStarted and Wait follows the shim until the exit
//     record appears.
//   - finish is run by the shim, before it records the exit, when launch
//     ended without being asked to stop or exited with code 1 (also after
//     a Stop, as the spec says). Running it in the shim means it runs even
//     while jacod is down, and Wait returns only once it is done.
//   - Stop asks the shim to signal launch's process group: the spec's
//     stop_signal (SIGINT by default), then SIGQUIT after the stop grace
//     period, then SIGKILL after the abort grace period. The shim is
//     always sent SIGINT, SIGQUIT and SIGTERM: it forwards SIGINT as the
//     stop signal recorded in the launch spec Start wrote (so a later
//     jacod stops launch with the same signal, and a stop signal of
//     SIGTERM, or one that would end the shim, never reaches the shim
//     itself), and turns SIGTERM into SIGKILL of the group, since it
//     cannot forward a SIGKILL it never receives. Any of those signals
//     marks the replica as asked to stop.
//   - Remove runs cleanup and deletes the bundle, the anonymous volumes
//     and the state files; the agent owns Dir itself and LogPath. It refuses while anything runs.
//   - Secrets and configs (Replica.Files) are in a tmpfs of the replica's
//     own in Dir, made by Prepare and unmounted by Remove after cleanup:
//     every hook and Exec finds secrets in $JACO_SECRETS_DIR (at their
//     targets, the secret's name by default) and configs in
//     $JACO_CONFIGS_DIR (at their absolute targets below it), each with
//     its mode and owner (files.go).
//   - A replica whose spec has a notify health check (api.NotifyCheck)
//     gets a unix datagram socket, Dir/notify.sock, bound by Start before
//     launch runs and named in launch's env as JACO_NOTIFY_SOCKET and
//     NOTIFY_SOCKET (sd_notify(3) and systemd-notify work unchanged).
//     jacod reads it (exec.Notifier, notify.go): the socket belongs to
//     the jacod that bound it, so a later jacod unlinks and binds it
//     again at the same path, and a running launch's messages reach it;
//     what launch sends while no jacod runs is lost. READY=1 is
//     remembered in Dir (launch says it once) and given again to a later
//     jacod. Remove deletes both.
//
// Exit codes are launch's; a launch ended by a signal reports 128+signal
// and the signal's name ("SIGKILL"), as shells do. A shim killed outright
// leaves launch running: Wait then follows launch and, once it is gone,
// returns ErrShimLost (its exit code is lost with the shim), and Stop
// signals launch's group itself, the stop signal first.
//
// launch, prepare, finish, cleanup and Exec commands get the spec's env
// (after a default PATH) followed by the JACO_ variables and append
// their stdout and stderr to LogPath (Exec's output is discarded).
//
// Process options (docs/design.md §9). launch, finish and Exec commands
// run as the spec says; prepare and cleanup run as jacod does (root, its
// limits, in Dir/bundle): they set up and tear down what the replica
// needs on the node (prepare with the replica's mounts: see below).
//
//   - user (USER[:GROUP], names looked up on the node, numbers as they
//     are) and groups: USER alone takes the user's primary group, as
//     Docker does; a number the node has no user for has none and is
//     refused without a GROUP (the node's root group is not given on the
//     node's own file system). The supplementary groups are exactly
//     groups. groups alone keep jacod's user. The user reaches its hooks,
//     its secrets and configs (each with its own owner and mode) and its
//     notify socket: Prepare gives it a POSIX ACL entry letting that uid
//     search Dir and each directory above it it could not (u:UID:--x,
//     left in place: access.go says why), and the notify socket is
//     handed to it. A user, group or workdir the node lacks fails Prepare
//     and Start.
//   - workdir: where launch, finish and Exec commands start (Dir/bundle
//     by default). It must be an absolute path to a directory on the
//     node, and one missing is refused, not created: on the node's own
//     file system, making directories is not the runtime's to do.
//   - ulimits: launch, finish and Exec commands start with them. os/exec
//     cannot set limits on a child, and setting them on the starting
//     process would bind it too, so such a command starts as an exec
//     helper (jacod's binary again, "hook-shim" with
//     JACO_HOOK_SHIM_STAGE=exec) that sets them, then the user, on
//     itself as root and execs the command in its own place, same pid and
//     group (proc.go).
//
// Mounts and volumes (docs/adr/0059, docs/adr/0061-volumes.md). A
// replica's mounts are a container's: binds of node paths (read-only when
// the spec says, create_host_path making a missing source 0755), tmpfs
// mounts (size, mode; nosuid, nodev, noexec as Docker's), named volumes
// (the node's volume directory, <volumes-dir>/<name>/_data, made on first
// use through agent/volumes exactly as the containerd runtime makes it,
// and kept when the replica goes) and anonymous ones (a directory in Dir,
// deleted by Remove). They are made in a mount namespace of the
// replica's own, a slave copy of the host's (the one resolv.conf is bound
// in for a replica on networks, sandbox.go), over the node's own paths;
// nothing of them shows on the node.
//
//   - A target must exist on the node, a directory (a file for a bind of
//     a file): a bundle's root file system is the node's, and as with
//     workdir, making directories there is not the runtime's to do;
//     Prepare fails naming a missing one, before making anything. A target
//     inside another mount is inside that mount, and made there when
//     missing. No target may hide Dir or /proc.
//   - Prepare makes the volume directories and the bind sources asked for
//     and records the mounts in Dir. A volume directory the replica may
//     own (a named volume made now, an anonymous one) is given to the
//     spec's user, when it has one: there is no image whose directory
//     owner Docker would copy, and a root-owned volume would be one the
//     user cannot write. A volume already in use keeps its owner.
//   - launch and finish see the mounts (the shim is started in the
//     namespace); an Exec command enters the running replica's namespace,
//     so it sees launch's tmpfs and not an empty one of its own (a new
//     namespace when nothing runs).
//   - prepare sees them too, as root, in a namespace of its own per
//     attempt: it may fill a volume (or bind source) at its target, as
//     launch will find it; a tmpfs it writes goes with it.
//   - cleanup runs on the host's namespace, without them: the replica's
//     mounts went with its last process, as a container's do, and cleanup
//     must run even when a source or target vanished meanwhile.
//
// Networks (docs/adr/0026). A replica's networks are api.TaskNetworks:
// its spec's, then the ingress network when it publishes a port through
// the routing mesh (host-mode ports add none). A replica on no network
// runs on the node's own network and file system (with its mounts, as
// above). One on
// networks (the runtime needs WithNetworks) runs in a network namespace
// of its own:
//
//   - Prepare resolves each network's attachment (waiting, as long as its
//     context allows, until the node holds a block of it), makes the
//     namespace (a bind mount under the runtime's netns directory), brings
//     up its loopback and attaches it with netattach: eth0, eth1, … one
//     per network in the spec's order, each with an address from the
//     node's block and a route to that network's subnet through the
//     node's gateway on it. There is no other interface and no default
//     route: the replica reaches replicas and virtual IPs of its networks,
//     and the node through the gateways (its DNS server), nothing outside.
//     The attachments, the namespace and the addresses are written to
//     Dir, so Remove and a later runtime (jacod restarted) need nothing of
//     the node's view of the networks.
//   - launch, finish and Exec commands run in the namespace and see, as
//     /etc/resolv.conf, a file naming the node's DNS server on the first
//     network's gateway with ndots:0 (netattach.ResolvConf): they run in
//     a mount namespace of their own, a slave copy of the host's with that
//     file bound over /etc/resolv.conf (and the spec's mounts made); the
//     rest of the file system is the host's. The shim is started in both
//     namespaces, so everything it runs is in them (sandbox.start says
//     how).
//   - prepare and cleanup run on the host network: they set up and tear
//     down what the replica needs on the node (fetching included), and
//     cleanup runs once the replica is detached.
//   - Address is the replica's address on its first network (health
//     checks dial it from the node, which reaches the block through the
//     bridge); NetworkAddresses (exec.Networked) lists one per network
//     once Start ran.
//   - Remove detaches (CNI DEL frees the leases, also when the namespace
//     is gone) and removes the namespace before running cleanup; a failure
//     there leaves everything for the next Remove.
package hooks
