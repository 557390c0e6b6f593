#!/usr/bin/env bash
# A manager reopening a kept data dir, without its nodes
# (docs/bench/largestore.md): for each commit in turn, ROUNDS times
# alternated, a fresh copy of STATE (KEEP_STATE of bench-largestore.sh)
# opened by jacod built at that commit, on loopback with no node able to
# reach it: the time from its start to "leader subsystems started", the
# CPU it used in its first SECONDS (10 unless set), and its RSS then.
# Appends to $BENCH_OUT/raw.txt.
#
#   KEEP_STATE=/tmp/s NODES=5000 RESTARTS=1 REFS=no scripts/bench-largestore.sh
#   BENCH_OUT=/tmp/reopen scripts/bench-reopen.sh /tmp/s cc455b7 6daad8f
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh
source scripts/lib/bench.sh
ensure_pkgs git gcc libc6-dev procps
ensure_go

if (($# < 2)); then
	echo "usage: $0 STATE REV..." >&2
	exit 2
fi
state=$1
shift
rounds=${ROUNDS:-3}
seconds=${SECONDS_AFTER:-10}
out=${BENCH_OUT:-docs/bench/largestore/reopen}
bench_workdir jaco-bench-reopen
mkdir -p "$out"
for r in "$@"; do
	JACO_REV=$r bench_build_daemons scripts/bench-reopen.sh
	mv "$work/bin" "$work/bin-$r"
	rm -rf "$work/src"
done

echo "# bench-reopen: $state ($(du -sh "$state/raft" | cut -f1) of raft state), $(date -u +%FT%TZ), machine $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/raw.txt"
for i in $(seq 1 "$rounds"); do
	for r in "$@"; do
		rm -rf "$work/s"
		cp -a "$state" "$work/s"
		sync
		start=$(date +%s%N)
		setsid "$work/bin-$r/jacod" --data-dir "$work/s" --listen-addr 127.0.0.1:27440 \
			--node-name reopen --overlay=false >"$work/s.log" 2>&1 &
		bench_pid=$! # bench_cleanup stops it if this script is interrupted
		wait_for 120 grep -q "leader subsystems started" "$work/s.log"
		led=$(($(log_at "$work/s.log" "leader subsystems started") - start))
		sleep "$(awk -v s="$seconds" -v ns="$led" 'BEGIN {r = s - ns / 1e9; printf "%.2f", (r > 0 ? r : 0)}')"
		cpu=$(($(ticks "$bench_pid") * 10)) # ms, at 100 ticks a second
		rss=$(rss_kb "$bench_pid")
		kill -9 "$bench_pid"
		wait "$bench_pid" 2>/dev/null || true
		bench_pid=
		echo "reopen $r round $i: leading after $(secs "$led") s; CPU in its first ${seconds} s $cpu ms; RSS then $(mib "$rss") MiB" | tee -a "$out/raw.txt"
	done
done
