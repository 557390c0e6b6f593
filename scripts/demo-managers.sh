#!/usr/bin/env bash
# The managers demo, end to end on one machine: build jaco, start three daemons
# on loopback, make the first the first manager of a new cluster, join the
# other two with single-use tokens, watch them become voters, SIGKILL the
# leader, write through a survivor, and bring the old leader back.
# Pass --keep to leave the daemons running and their data dirs in place.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

keep=
[[ ${1:-} == --keep ]] && keep=1

ensure_pkgs git gcc libc6-dev ca-certificates
ensure_go
log "building jacod and jaco"
mkdir -p bin
go build -o bin/ ./cmd/jacod ./cmd/jaco

# jaco's port is 7000; take free ones from there, since another program on
# this machine may hold it. Each stays fixed across restarts: the cluster
# records the address a manager advertises.
ports=()
port=7000
while ((${#ports[@]} < 3)); do
	(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || ports+=("$port")
	port=$((port + 1))
done

base=$(mktemp -d /tmp/jaco-demo.XXXXXX)
pids=()
cleanup() {
	if [[ -n $keep ]]; then
		log "left running: pids ${pids[*]}; data dirs $base/m1..m3 (JACO_DATA_DIR=$base/m1 ./bin/jaco cluster status)"
		return
	fi
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$base"
}
trap cleanup EXIT

jaco() { local i=$1; shift; ./bin/jaco --data-dir "$base/m$i" "$@"; }
run() { local i=$1; shift; printf '\n[m%s]$ jaco %s\n' "$i" "$*"; jaco "$i" "$@"; }

start() {
	local i=$1
	mkdir -p "$base/m$i"
	./bin/jacod --data-dir "$base/m$i" --listen-addr "127.0.0.1:${ports[i-1]}" --node-name "m$i" >>"$base/m$i.log" 2>&1 &
	pids[i-1]=$!
	wait_for 10 jaco "$i" --timeout 1s cluster status && return 0
	log "jacod m$i did not come up; its log:"; cat "$base/m$i.log"; return 1
}

voters() { [[ $(jaco "$1" cluster status --format json | grep -c '"suffrage": "VOTER"') == "$2" ]]; }
# leader_name I: the hostname of the leader as manager I sees it.
leader_name() {
	jaco "$1" cluster status --format json | tr -d ' \n' |
		grep -o '"hostname":"[^"]*","address":"[^"]*","raft_id":"[^"]*","status":"[A-Z]*","suffrage":"[A-Z]*","leader":true' |
		sed 's/"hostname":"\([^"]*\)".*/\1/'
}
# led_by_other I NAME: manager I sees a leader, and it is not NAME.
led_by_other() { local l; l=$(leader_name "$1"); [[ -n $l && $l != "$2" ]]; }

log "starting three daemons (data under $base)"
for i in 1 2 3; do start "$i"; done
run 1 cluster status
printf '\n[m1]$ jaco cluster init --quiet\n'
jaco 1 cluster init --quiet
for i in 2 3; do
	token=$(jaco 1 node issue-join-token --role manager 2>/dev/null)
	printf '\n[m1]$ jaco node issue-join-token --role manager\n%s\n' "$token"
	printf '\n[m%s]$ jaco node join --peer 127.0.0.1:%s --token ...\n' "$i" "${ports[0]}"
	jaco "$i" node join --peer "127.0.0.1:${ports[0]}" --token "$token"
done
log "waiting for the voter-set policy to promote the newcomers (3 managers -> 3 voters)"
wait_for 30 voters 1 3
run 2 cluster status
run 3 node ls

old=$(leader_name 1); old=${old#m}
log "killing the leader, m$old, with SIGKILL"
kill -9 "${pids[old-1]}"; wait "${pids[old-1]}" 2>/dev/null || true
survivor=$((old % 3 + 1))
wait_for 30 led_by_other "$survivor" "m$old"
run "$survivor" cluster status
printf '\n[m%s]$ jaco node issue-join-token    # a write, through whichever manager\n' "$survivor"
jaco "$survivor" node issue-join-token

log "restarting m$old on its data dir: it rejoins as a follower"
start "$old"
wait_for 30 led_by_other "$old" ""
run "$old" cluster status
log "demo done"
