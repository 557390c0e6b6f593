#!/usr/bin/env bash
# Large stores in a real daemon (docs/bench/largestore.md),
# on loopback only, as a new user would try them:
#   1. one manager; `service create -d --replicas N` of a hook bundle no
#      node may run (the tasks stay pending): the time until the store
#      holds every task (its jaco_store_objects gauge, read every 50 ms),
#      the time until the daemon is idle again (the scheduler's pending
#      reasons written too), its RSS and live heap;
#   2. the listings at that size (service ls, service ps, status, node ls);
#   3. kill -9 and restart: the time to serve and to lead, and the RSS;
#   4. a worker running 100 replicas of a hook bundle: its RSS and the
#      memory of each replica's shim;
#   5. one manager and NODES worker nodes simulated by `jaco-bench nodes`
#      (each its own certificate and one mTLS connection for the agent's
#      session and the role check, no replica run): the time until they
#      are READY, the manager's RSS per node; `service create -d
#      --replicas N` placed on them and reported RUNNING: the time until
#      all run and the daemon is idle, its RSS, live heap and goroutines,
#      the simulator's RSS; then kill -9 and restart with the nodes
#      coming back (RESTARTS times, 3 unless set, each once the manager
#      is idle; then once more right after the service is removed and
#      created again, killed as soon as its replicas all run): the time
#      to serve, to lead and until every node is in session again, and
#      the RSS; and
#      the floor, `jaco-bench conns`: what a bare gRPC server holds for as
#      many mTLS connections with two open streams each;
#   6. in the same run, the in-process references: BenchmarkCreate (the
#      orchestrator's creations through raft beside bare creates) and
#      BenchmarkPlacement at 100 000 replicas over 1 000 nodes.
# Builds jaco into a scratch dir (removed at exit, with every daemon it
# started and their replicas), then waits (10 min at most) for the
# 1-minute load average to fall below 1. Writes $BENCH_OUT/raw.txt.
#
#   scripts/bench-largestore.sh                         # 100 000 replicas, 5 000 nodes
#   REPLICAS=20000 NODES=500 BENCH_OUT=/tmp/ls scripts/bench-largestore.sh
#   NODES=0 scripts/bench-largestore.sh                 # no step 5
#   JACO_REV=6f7a3bc REFS=no scripts/bench-largestore.sh  # daemons of a commit, no step 6
#   KEEP_STATE=/tmp/s scripts/bench-largestore.sh       # step 5's manager, killed, copied there
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh
source scripts/lib/bench.sh
ensure_pkgs git gcc libc6-dev ca-certificates curl procps
ensure_go

replicas=${REPLICAS:-100000}
nodes=${NODES:-5000}
restarts=${RESTARTS:-3}
out=${BENCH_OUT:-docs/bench/largestore}
bench_workdir jaco-bench-large
mkdir -p "$out"
bench_build scripts/bench-largestore.sh
bin=$work/bin
raw=$out/raw.txt
bench_wait_quiet

daemons=()
stop_daemons() {
	local p
	for p in "${daemons[@]}"; do
		kill -9 -- "-$p" 2>/dev/null || kill -9 "$p" 2>/dev/null || true
	done
	# The hook shims of the worker's replicas outlive a killed daemon.
	pkill -9 -f "$work/bin/jacod hook-shim" 2>/dev/null || true
}
trap 'stop_daemons; bench_cleanup' EXIT

# start_jacod NAME DIR PORT [FLAG...]: a daemon in its own process group,
# logging to DIR.log; sets pid.
start_jacod() {
	local name=$1 dir=$2 port=$3
	shift 3
	setsid "$bin/jacod" --data-dir "$dir" --listen-addr "127.0.0.1:$port" --node-name "$name" \
		--overlay=false "$@" >>"$dir.log" 2>&1 &
	pid=$!
	disown "$pid" # no job notice when it is killed
	daemons+=("$pid")
	wait_for 30 test -S "$dir/jaco.sock"
}

# wait_idle PID START [FLOOR]: waits until the process used under 5 % of
# a core (above FLOOR %, its steady use: 0 unless given) over two seconds
# running, and prints how long it took from START (ns since the epoch),
# the two quiet seconds left out.
wait_idle() {
	local p=$1 start=$2 floor=${3:-0} quiet=0 a b
	a=$(ticks "$p")
	for _ in $(seq 1 1200); do
		sleep 1
		b=$(ticks "$p")
		if ((b - a < 5 + floor)); then
			quiet=$((quiet + 1))
			if ((quiet == 2)); then
				echo $(($(date +%s%N) - start - 2000000000))
				return
			fi
		else
			quiet=0
		fi
		a=$b
	done
	log "the daemon did not go idle within 20 minutes"
	return 1
}

# timed CMD...: runs a jaco command, prints "seconds lines exit".
timed() {
	local s rc=0
	s=$(date +%s%N)
	"$@" >"$work/out.txt" 2>&1 || rc=$?
	echo "$(secs $(($(date +%s%N) - s))) s, $(wc -l <"$work/out.txt") lines, exit $rc"
}

{
	echo "# bench-largestore: $replicas replicas, $nodes simulated nodes, $(date -u +%FT%TZ), jaco $rev"
	echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB, load $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$raw"

m=$work/m
mkdir -p "$work/bundle"
printf '#!/bin/sh\nexec sleep 100000\n' >"$work/bundle/launch"
chmod +x "$work/bundle/launch"
debug=()
if "$bin/jacod" --help 2>&1 | grep -q -- --debug-addr; then
	debug=(--debug-addr 127.0.0.1:27401)
fi
start_jacod m "$m" 27400 "${debug[@]}" --metrics-addr 127.0.0.1:27402
mpid=$pid
export JACO_DATA_DIR=$m
"$bin/jaco" cluster init >/dev/null
"$bin/jaco" cluster update --max-replicas-per-service "$replicas" >/dev/null
idle_kb=$(rss_kb "$mpid")

# live_heap PORT: the heap after a GC, or "?": the spans in use
# (HeapInuse), the live objects in them (HeapAlloc) and the goroutines'
# stacks, which are outside the heap.
live_heap() {
	if ((${#debug[@]} == 0)); then
		echo "?"
		return
	fi
	curl -s "http://127.0.0.1:$1/debug/pprof/heap?gc=1&debug=1" |
		awk '/^# HeapInuse = / {u = $4} /^# HeapAlloc = / {a = $4} /^# Stack = / {st = $4}
			END {printf "%.0f MiB (HeapInuse after a GC; objects %.0f MiB, stacks %.0f MiB)", u / 1048576, a / 1048576, st / 1048576}'
}

# every_task_stored: the manager's store holds $replicas tasks, by its
# metrics.
every_task_stored() {
	[[ $(curl -s http://127.0.0.1:27402/metrics | awk '/^jaco_store_objects\{kind="task"\}/ {print $2}') == "$replicas" ]]
}

log "1. service create -d --replicas $replicas (tasks stay pending)"
start=$(date +%s%N)
"$bin/jaco" service create -d --name big --replicas "$replicas" --constraint node.labels.none==x --bundle "$work/bundle" >/dev/null
stored=
if WAIT_EVERY=0.05 wait_for 600 every_task_stored; then
	stored=$(($(date +%s%N) - start))
fi
settle=$(wait_idle "$mpid" "$start")
tasks=$("$bin/jaco" service ps big --format json | grep -c '"id"')
{
	if [[ -n $stored ]]; then
		echo "create: every task in the store after $(secs "$stored") s ($(awk -v n="$replicas" -v ns="$stored" 'BEGIN {printf "%.0f", n / (ns / 1e9)}') tasks/s, from the create call)"
	else
		echo "create: the store did not hold $replicas tasks within 10 minutes"
	fi
	echo "create: $replicas replicas, $tasks tasks stored; daemon idle again after $(secs "$settle") s ($(awk -v n="$replicas" -v ns="$settle" 'BEGIN {printf "%.0f", n / (ns / 1e9)}') tasks/s, pending reasons included)"
	echo "create: manager RSS $(mib "$(rss_kb "$mpid")") MiB (idle before: $(mib "$idle_kb") MiB), live heap $(live_heap 27401)"
} | tee -a "$raw"

log "2. listings"
{
	echo "service ls: $(timed "$bin/jaco" service ls)"
	echo "service ps big: $(timed "$bin/jaco" service ps big)"
	echo "status: $(timed "$bin/jaco" status)"
	echo "node ls: $(timed "$bin/jaco" node ls)"
} | tee -a "$raw"

log "3. kill -9 and restart"
kill -9 -- "-$mpid"
wait_for 10 sh -c "! kill -0 $mpid"
mv "$m.log" "$m.first.log" # the restart's lines alone in $m.log
start=$(date +%s%N)
start_jacod m "$m" 27400
mpid=$pid
wait_for 120 grep -q "leader subsystems started" "$m.log"
served=$(log_at "$m.log" "jacod serving")
led=$(log_at "$m.log" "leader subsystems started")
wait_idle "$mpid" "$start" >/dev/null
{
	echo "restart: serving after $(secs $((served - start))) s, leading after $(secs $((led - start))) s; RSS once idle $(mib "$(rss_kb "$mpid")") MiB"
	echo "restart: from $(find "$m/raft/snap" -name '*.snap' | wc -l) snapshot file(s) and $(find "$m/raft/wal" -name '*.wal' | wc -l) WAL file(s)"
} | tee -a "$raw"
kill -9 -- "-$mpid"

log "4. a worker with 100 hook replicas"
a=$work/a
w=$work/w
start_jacod a "$a" 27410
JACO_DATA_DIR=$a "$bin/jaco" cluster init >/dev/null
start_jacod w "$w" 27420
wpid=$pid
token=$(JACO_DATA_DIR=$a "$bin/jaco" node issue-join-token --role worker 2>/dev/null | grep -o 'JACO1-[^ ]*' | head -1)
JACO_DATA_DIR=$w "$bin/jaco" node join --peer 127.0.0.1:27410 --token "$token" >/dev/null
wait_for 30 sh -c "JACO_DATA_DIR=$a '$bin/jaco' node ls | grep -q ' w .*worker'"
widle=$(rss_kb "$wpid")
JACO_DATA_DIR=$a "$bin/jaco" service create --name h100 --replicas 100 --constraint node.role==worker --bundle "$work/bundle" >/dev/null
sleep 5
shims=$(pgrep -f "$bin/jacod hook-shim" || true)
shim_pss=0
for s in $shims; do shim_pss=$((shim_pss + $(pss_kb "$s"))); done
nshims=$(wc -w <<<"$shims")
{
	echo "agent: worker RSS $(mib "$(rss_kb "$wpid")") MiB with 100 replicas running (idle: $(mib "$widle") MiB), PSS $(mib "$(pss_kb "$wpid")") MiB"
	echo "agent: $nshims hook shims, PSS $(mib "$shim_pss") MiB in all ($((shim_pss / (nshims > 0 ? nshims : 1))) kB each)"
} | tee -a "$raw"
stop_daemons
daemons=()

if ((nodes > 0)); then
	source scripts/lib/largestore-nodes.sh
	simulated_nodes
fi

if [[ ${REFS:-yes} == no ]]; then
	log "wrote $raw"
	exit 0
fi
log "6. in-process references"
{
	echo "# go test -bench, same run"
	go test -run XXX -bench 'BenchmarkCreate/replicas=100000$' -benchtime 1x ./manager/orchestrator | grep Benchmark
	go test -run XXX -bench 'BenchmarkPlacement/replicas=100000/nodes=1000$' -benchtime 1x ./manager/scheduler | grep Benchmark
} | tee -a "$raw"
log "wrote $raw"
