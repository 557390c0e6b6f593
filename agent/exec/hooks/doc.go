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
//   - Stop asks the shim to signal launch's process group: SIGINT, then
//     SIGQUIT after the stop grace period, then SIGKILL after the abort
//     grace period (the shim turns SIGTERM into SIGKILL of the group,
//     since it cannot forward a SIGKILL it never receives). Any of those
//     signals marks the replica as asked to stop.
//   - Remove runs cleanup and deletes the bundle and the state files; the
//     agent owns Dir itself and LogPath. It refuses while anything runs.
//
// Exit codes are launch's; a launch ended by a signal reports 128+signal
// and the signal's name ("SIGKILL"), as shells do. A shim killed outright
// leaves launch running: Wait then follows launch and, once it is gone,
// returns ErrShimLost (its exit code is lost with the shim), and Stop
// signals launch's group itself.
//
// launch, prepare, finish, cleanup and Exec commands get the spec's env
// (after a default PATH) followed by the JACO_ variables, run in
// Dir/bundle, and append their stdout and stderr to LogPath.
package hooks
