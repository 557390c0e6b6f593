# shellcheck shell=bash
# Step 5 of scripts/bench-largestore.sh, which sources this file and its
# helpers (start_jacod, rss_kb, wait_idle, live_heap, log_at, secs, mib,
# wait_for)
# and sets bin, work, raw, replicas, nodes, restarts, debug and the bundle
# in $work/bundle: $replicas replicas over $nodes worker nodes simulated by
# `jaco-bench nodes` against one real manager, then the manager's kill -9
# and restart while the nodes stay, $restarts times once it is idle and
# once right after a placement. On loopback only.

# goroutines PORT: the goroutine count the debug endpoint on PORT shows,
# or "?" when the daemon serves none.
goroutines() {
	if ((${#debug[@]} == 0)); then
		echo "?"
		return
	fi
	curl -s "http://127.0.0.1:$1/debug/pprof/goroutine?debug=1" | awk 'NR == 1 {print $NF}'
}

# cpu_pct PID SECONDS: the percent of a core PID used over SECONDS.
cpu_pct() {
	local a b
	a=$(ticks "$1")
	sleep "$2"
	b=$(ticks "$1")
	echo $(((b - a) / $2))
}

# ready_count: nodes `jaco node ls` shows READY (not the manager, which
# shows overlay_unavailable: it runs with --overlay=false).
ready_count() {
	"$bin/jaco" node ls --format json | grep -c '"state": *"ready"' || true
}

# running_count: replicas of service sim running, as `service ls` counts.
running_count() {
	"$bin/jaco" service ls --format json | awk -F': *' '/"running"/ {gsub(/[^0-9]/, "", $2); print $2; exit}'
}

# wait_count TIMEOUT WANT FUNC: polls FUNC every second until it prints
# WANT; fails with what it printed last after TIMEOUT seconds.
wait_count() {
	local timeout=$1 want=$2 fn=$3 got=
	for _ in $(seq 1 "$timeout"); do
		got=$($fn)
		if [[ $got == "$want" ]]; then
			return 0
		fi
		sleep 1
	done
	log "$fn: $got after ${timeout}s, want $want"
	return 1
}

simulated_nodes() {
	log "5. $replicas replicas over $nodes simulated nodes"
	local s=$work/s sdebug=() spid simpid start joined settle
	if ((${#debug[@]})); then
		sdebug=(--debug-addr 127.0.0.1:27431)
	fi
	start_jacod s "$s" 27430 "${sdebug[@]}"
	spid=$pid
	export JACO_DATA_DIR=$s
	"$bin/jaco" cluster init >/dev/null
	"$bin/jaco" cluster update --max-replicas-per-service "$replicas" >/dev/null
	local idle_kb
	idle_kb=$(rss_kb "$spid")

	start=$(date +%s%N)
	setsid "$bin/jaco-bench" nodes --manager 127.0.0.1:27430 --socket "$s/jaco.sock" \
		--count "$nodes" --state "$work/nodes" >>"$work/nodes.log" 2>&1 &
	simpid=$!
	disown "$simpid"
	daemons+=("$simpid")
	wait_count 1800 "$nodes" ready_count
	joined=$(($(date +%s%N) - start))
	# The nodes never leave the manager idle (heartbeats every 5 s, role
	# checks every 2 s): their steady use, measured after two heartbeat
	# periods, is the floor the waits for idle below add 5 % to.
	sleep 10
	local steady nodes_kb
	steady=$(cpu_pct "$spid" 10)
	nodes_kb=$(rss_kb "$spid")
	{
		echo "nodes: $nodes simulated nodes joined and READY after $(secs "$joined") s ($(awk -v n="$nodes" -v ns="$joined" 'BEGIN {printf "%.0f", n / (ns / 1e9)}') nodes/s, 32 joins at once); the manager's steady CPU with them $steady % of a core (simulator $(cpu_pct "$simpid" 5) %)"
		echo "nodes: manager RSS $(mib "$nodes_kb") MiB with them in session (idle before: $(mib "$idle_kb") MiB; $(((nodes_kb - idle_kb) / nodes)) kB a node), live heap $(live_heap 27431), $(goroutines 27431) goroutines; simulator RSS $(mib "$(rss_kb "$simpid")") MiB"
	} | tee -a "$raw"

	start=$(date +%s%N)
	"$bin/jaco" service create -d --name sim --replicas "$replicas" --constraint node.role==worker --bundle "$work/bundle" >/dev/null
	wait_count 1800 "$replicas" running_count
	local ran
	ran=$(($(date +%s%N) - start))
	settle=$(wait_idle "$spid" "$start" "$steady")
	{
		echo "nodes: $replicas replicas RUNNING after $(secs "$ran") s, daemon idle again after $(secs "$settle") s"
		echo "nodes: manager RSS $(mib "$(rss_kb "$spid")") MiB, live heap $(live_heap 27431), $(goroutines 27431) goroutines; simulator RSS $(mib "$(rss_kb "$simpid")") MiB"
		echo "nodes: listings: service ls $(timed "$bin/jaco" service ls); node ls $(timed "$bin/jaco" node ls)"
	} | tee -a "$raw"
	if ((${#debug[@]})); then
		# Where the leader's memory goes, for `go tool pprof`.
		curl -s -o "$out/nodes-heap.pb.gz" "http://127.0.0.1:27431/debug/pprof/heap?gc=1"
	fi

	local i
	for i in $(seq 1 "$restarts"); do
		restart_with_nodes "$i"
	done
	# The hardest restart: killed as soon as a placement's replicas all
	# run, so that the open replays the placement's writes (a snapshot
	# taken mid-placement, the rest in the WAL).
	log "5. the service again, the manager killed as soon as its replicas run"
	"$bin/jaco" service rm sim >/dev/null
	wait_idle "$spid" "$(date +%s%N)" "$steady" >/dev/null
	"$bin/jaco" service create -d --name sim --replicas "$replicas" --constraint node.role==worker --bundle "$work/bundle" >/dev/null
	wait_count 1800 "$replicas" running_count
	restart_with_nodes after-placement
	kill -TERM "$simpid" 2>/dev/null || true
	wait_for 30 sh -c "! kill -0 $simpid"
	stop_daemons
	daemons=()
	unset JACO_DATA_DIR
	# The floor under the manager's memory per node, in the same run: a
	# bare gRPC server holding as many mTLS connections, each with two
	# open streams, on jacod's transport settings.
	"$bin/jaco-bench" conns --count "$nodes" 2>>"$work/conns.log" | tee -a "$raw"
}

# restart_with_nodes I: kill -9 the manager (spid) while the simulated
# nodes stay, restart it, and record when it served, led, and had every
# node in session again (restart I of $restarts, one restart's time
# saying little about the next, or I=after-placement).
restart_with_nodes() {
	local i=$1 sim_lines start served led back settle
	log "5. kill -9 and restart with $nodes nodes (restart $i)"
	kill -9 -- "-$spid"
	wait_for 10 sh -c "! kill -0 $spid"
	mv "$s.log" "$s.before-restart-$i.log"
	if [[ -n ${KEEP_STATE:-} && $i == 1 ]]; then
		# The killed manager's data dir, to reopen offline (without
		# the nodes) while working on the restart.
		rm -rf "$KEEP_STATE"
		cp -a "$s" "$KEEP_STATE"
	fi
	sim_lines=$(wc -l <"$work/nodes.log")
	start=$(date +%s%N)
	start_jacod s "$s" 27430 "${sdebug[@]}"
	spid=$pid
	wait_for 120 grep -q "leader subsystems started" "$s.log"
	served=$(log_at "$s.log" "jacod serving")
	led=$(log_at "$s.log" "leader subsystems started")
	# Every node back in a session, as the simulator saw it.
	wait_for 600 sh -c "tail -n +$((sim_lines + 1)) '$work/nodes.log' | grep -q 'every node in session'"
	tail -n +$((sim_lines + 1)) "$work/nodes.log" >"$work/nodes.after.log"
	back=$(log_at "$work/nodes.after.log" "every node in session")
	settle=$(wait_idle "$spid" "$start" "$steady")
	{
		echo "nodes restart $i: serving after $(secs $((served - start))) s, leading after $(secs $((led - start))) s, every node in session again after $(secs $((back - start))) s"
		echo "nodes restart $i: idle again after $(secs "$settle") s; then $(ready_count) nodes READY, $(running_count) replicas running; manager RSS $(mib "$(rss_kb "$spid")") MiB, live heap $(live_heap 27431), $(goroutines 27431) goroutines; simulator RSS $(mib "$(rss_kb "$simpid")") MiB"
		echo "nodes restart $i: from $(find "$s/raft/snap" -name '*.snap' | wc -l) snapshot file(s) and $(find "$s/raft/wal" -name '*.wal' | wc -l) WAL file(s); $(grep -c 'nodes missed their heartbeats' "$s.log" || true) missed-heartbeat sweep(s) in the restarted manager's log"
	} | tee -a "$raw"
}
