#!/usr/bin/env bash
# Time to roll every replica of a 30-replica hook-bundle service
# (docs/bench/updates.md): one jacod on loopback that is the
# manager and runs the replicas, `UpdateService` with force_update+1 under
# update parallelism 1, 5 and 30 with a 0 s monitor and 30 with the
# default 5 s monitor, each until update_status is COMPLETED and every
# replica is new and RUNNING; beside, in the same run, the floor: the same
# launch script replaced directly through `jacod hook-shim` (as the hooks
# runtime starts and stops it), p at a time.
# Installs what it needs where missing (Debian), builds jaco and
# jaco-bench (bench/), runs as root, and writes docs/bench/updates/results.{md,json}.
# Every daemon, replica and scratch directory is removed however the run ends.
#
#   sudo scripts/bench-updates.sh                      # 30 replicas, 5 rounds (about 3 min)
#   sudo scripts/bench-updates.sh --rounds 1 --replicas 6
#   sudo JACO_REV=HEAD scripts/bench-updates.sh        # daemons built from a commit, not the work tree
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh
source scripts/lib/bench.sh

if [[ $(id -u) -ne 0 ]]; then
	log "run as root: jacod's agent runs the replicas"
	exit 1
fi
ensure_pkgs procps git gcc libc6-dev ca-certificates
ensure_go

out=${BENCH_OUT:-docs/bench/updates}
bench_workdir jaco-bench-upd
mkdir -p "$out"
bench_build scripts/bench-updates.sh

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average now: $load_before (other work on the machine skews every figure)"

"$work/bin/jaco-bench" updates --work "$work/run" --out "$out" \
	--jacod "$work/bin/jacod" --jaco "$work/bin/jaco" \
	--load-before "$load_before (jaco $rev)" "$@" &
bench_pid=$!
wait "$bench_pid"
bench_pid=
echo
cat "$out/results.md"
log "results in $out/"
