#!/usr/bin/env bash
# Create → running latency of replicas under containerd + runc with a
# loaded image (docs/bench/containers.md): on one private containerd, in a
# network namespace of its own, each round measures
#   1. the floors: `ctr run -d` of the same image one at a time, and what
#      jaco's containerd controller does (netns, container, CNI bridge,
#      task, start) through the Go client, one at a time and all at once;
#   2. jaco: one jacod (manager + agent) and `service create --replicas N`,
#      latency per replica from the create call to its RUNNING status.
# Installs containerd, runc, the CNI plugins and busybox-static where
# missing (Debian), builds jaco and jaco-bench (bench/), runs as root, and writes
# docs/bench/containers/results.{md,json}. Every daemon, container,
# mount and scratch directory is removed however the run ends.
#
#   sudo scripts/bench-containers.sh                   # 100 replicas, 3 rounds (about 9 min)
#   sudo scripts/bench-containers.sh --replicas 20 --rounds 1
#   sudo scripts/bench-containers.sh --floors ctr      # any jaco-bench containers flag passes through
#   sudo JACO_REV=HEAD scripts/bench-containers.sh     # daemons built from a commit, not the work tree
#   sudo BENCH_OUT=docs/bench/containers/replicas-5 scripts/bench-containers.sh --replicas 5 --rounds 5
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh
source scripts/lib/bench.sh

if [[ $(id -u) -ne 0 ]]; then
	log "run as root: containerd, runc and CNI need it"
	exit 1
fi
ensure_pkgs containerd runc containernetworking-plugins busybox-static iproute2 util-linux iptables git gcc libc6-dev ca-certificates
ensure_go

out=${BENCH_OUT:-docs/bench/containers}
bench_workdir jaco-bench-ctr
mkdir -p "$out"
bench_build scripts/bench-containers.sh

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average now: $load_before (other work on the machine skews every figure)"

"$work/bin/jaco-bench" containers --work "$work/run" --out "$out" \
	--jacod "$work/bin/jacod" --jaco "$work/bin/jaco" --ctr "$(command -v ctr)" \
	--load-before "$load_before (jaco $rev)" "$@" &
bench_pid=$!
wait "$bench_pid"
bench_pid=
echo
cat "$out/results.md"
log "results in $out/"
