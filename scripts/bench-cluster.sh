#!/usr/bin/env bash
# Three jaco managers next to a three-member etcd, on this machine, on
# loopback only (docs/bench/cluster.md):
#   1. committed writes/s and latency at offered rates of 150, 1000, 8000
#      and 15000 writes/s, 60 s each, judged by the pass rule of
#      `etcdctl check perf`;
#   2. leader SIGKILL (20 times) → first acknowledged write;
#   3. `jaco node join` of a third manager → VOTER.
# Installs Debian's etcd-server and etcd-client where missing, builds jaco
# and jaco-bench (bench/), and writes the results (markdown tables, JSON, CSV)
# to docs/bench/cluster/. Every server it starts is stopped, and its
# scratch directory removed, however the run ends.
#
#   scripts/bench-cluster.sh                      # the published figures (about 20 min)
#   scripts/bench-cluster.sh --duration 10s       # quicker: any jaco-bench flag passes through
#   scripts/bench-cluster.sh --phases failover --kills 5
#   JACO_REV=HEAD scripts/bench-cluster.sh        # daemons built from a commit, not the work tree
#   BENCH_OUT=docs/bench/cluster/x scripts/bench-cluster.sh --phases failover   # results elsewhere
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh
source scripts/lib/bench.sh

ensure_pkgs etcd-server etcd-client git gcc libc6-dev ca-certificates
ensure_go

out=${BENCH_OUT:-docs/bench/cluster}
bench_workdir jaco-bench
mkdir -p "$out"
bench_build scripts/bench-cluster.sh

bench_wait_quiet

etcd_bin=$(command -v etcd)
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "jaco: $rev"
	echo "etcd: $("$etcd_bin" --version | head -1) (Debian etcd-server $(dpkg-query -W -f='${Version}' etcd-server))"
	echo "go: $(go env GOVERSION)"
	echo "kernel: $(uname -r)"
	echo "nproc: $(nproc)"
	echo "memory: $(free -g | awk '/^Mem:/ {print $2 " GiB"}')"
	echo "disk (df -h of the scratch dir): $(df -h "$work" | tail -1)"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "arguments: $*"
} >"$out/machine.txt"
cat "$out/machine.txt" >&2

"$work/bin/jaco-bench" --work "$work/run" --out "$out" \
	--jacod "$work/bin/jacod" --jaco "$work/bin/jaco" --etcd "$etcd_bin" "$@" &
bench_pid=$!
wait "$bench_pid"
bench_pid=
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"

for f in rate failover join; do
	[[ -f $out/$f.md ]] && { echo; cat "$out/$f.md"; }
done
log "results in $out/"
