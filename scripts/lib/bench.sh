# shellcheck shell=bash
# Shared by the bench scripts: a scratch dir removed at exit (after the
# running jaco-bench, whose pid is in bench_pid, is stopped), and the
# binaries built from JACO_REV or the work tree.

# bench_workdir PREFIX: sets work to a fresh scratch dir and the traps that
# stop jaco-bench (SIGTERM: it stops what it started) and remove the dir.
bench_workdir() {
	work=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	bench_pid=
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}

bench_cleanup() {
	if [[ -n $bench_pid ]]; then
		kill -TERM "$bench_pid" 2>/dev/null || true
		wait "$bench_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}

# bench_build SCRIPT: bench_build_daemons, then jaco-bench (bench/) from
# the work tree into $work/bin.
bench_build() {
	bench_build_daemons "$1"
	log "building jaco-bench"
	go build -o "$work/bin/jaco-bench" ./bench
}

# bench_build_daemons SCRIPT: builds jacod and jaco into $work/bin from
# JACO_REV (a commit) or else the work tree; sets rev to what they were
# built from. SCRIPT is the calling script, whose own edits do not make
# the tree "uncommitted".
bench_build_daemons() {
	mkdir -p "$work/bin"
	if [[ -n ${JACO_REV:-} ]]; then
		rev=$(git rev-parse --short "$JACO_REV")
		log "building jacod and jaco from $JACO_REV ($rev)"
		mkdir -p "$work/src"
		git archive "$rev" | tar -x -C "$work/src"
		(cd "$work/src" && go build -o "$work/bin/" ./cmd/jacod ./cmd/jaco)
	else
		rev=$(git rev-parse --short HEAD)
		git diff --quiet HEAD -- . ':!bench' ":!$1" ':!docs' 2>/dev/null || rev="$rev+uncommitted changes"
		log "building jacod and jaco from the work tree ($rev)"
		go build -o "$work/bin/" ./cmd/jacod ./cmd/jaco
	fi
}

# bench_wait_quiet: other work on the machine skews every figure. Writes
# back what the builds left dirty in the page cache (some 30 s later it
# stalled the first fsyncs measured for up to 450 ms, docs/bench/cluster.md),
# then waits (10 min at most) for the 1-minute load average to fall below
# 1. The caller records the load either way.
bench_wait_quiet() {
	local waited=
	sync
	for _ in $(seq 120); do
		awk '{exit !($1 < 1.0)}' /proc/loadavg && return
		[[ $waited ]] || log "waiting for the load average to fall below 1 ($(cut -d' ' -f1 /proc/loadavg) now)"
		waited=1
		sleep 5
	done
}

# A process's memory (kB) and CPU (user and system, in clock ticks of
# USER_HZ: 100 a second on Linux) from /proc.
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
pss_kb() { awk '/^Pss:/ {print $2}' "/proc/$1/smaps_rollup"; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

secs() { awk -v ns="$1" 'BEGIN {printf "%.2f", ns / 1e9}'; }
mib() { awk -v kb="$1" 'BEGIN {printf "%.0f", kb / 1024}'; }

# log_at FILE MSG: the time (ns since the epoch) of the first line of a
# jacod log holding MSG.
log_at() {
	local t
	t=$(grep -m1 "$2" "$1" | sed -E 's/^time=([^ ]+) .*/\1/')
	date -d "$t" +%s%N
}
