#!/usr/bin/env bash
# The main job, end to end on one machine: build jaco, start a daemon in a
# temporary data dir, make it a single-manager cluster, show its status,
# kill it hard, restart it, and show that the cluster came back whole.
# Pass --keep to leave the daemon running and the data dir in place.
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

# jaco's port is 7000; take the first free one from there, since another
# program on this machine may hold it. It stays fixed across the restart,
# as the cluster records the address it advertises.
port=7000
while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do port=$((port + 1)); done

data=$(mktemp -d /tmp/jaco-demo.XXXXXX)
export JACO_DATA_DIR=$data
jaco() { ./bin/jaco "$@"; }
pid=
cleanup() {
	if [[ -n $keep ]]; then
		log "left running: jacod pid $pid, data dir $data (JACO_DATA_DIR=$data ./bin/jaco cluster status)"
		return
	fi
	[[ -n $pid ]] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$data"
}
trap cleanup EXIT

start() {
	./bin/jacod --listen-addr "127.0.0.1:$port" --node-name demo-manager >>"$data/jacod.log" 2>&1 &
	pid=$!
	for _ in $(seq 100); do
		jaco --timeout 1s cluster status >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	log "jacod did not come up; its log:"; cat "$data/jacod.log"; return 1
}

run() { printf '\n$ %s\n' "$*"; "$@"; }

log "starting jacod (data dir $data)"
start
run jaco cluster status
token=$(jaco cluster init --quiet)
printf '\n$ jaco cluster init --quiet\n%s\n' "$token"
run jaco cluster status
run jaco node ls
printf '\n$ JACO_TOKEN=... jaco --server 127.0.0.1:%s node ls\n' "$port"
JACO_TOKEN=$token jaco --server "127.0.0.1:$port" node ls

before=$(jaco cluster status --format json)
log "killing jacod with SIGKILL and starting it again on the same data dir"
kill -9 "$pid"; wait "$pid" 2>/dev/null || true
start
# The status is served as soon as the daemon is up; wait for its leader.
for _ in $(seq 100); do
	after=$(jaco cluster status --format json)
	grep -q '"leader": true' <<<"$after" && break
	sleep 0.1
done
run jaco cluster status
if [[ $before == "$after" ]]; then
	log "restart kept the cluster: same cluster id, node id, raft member and leader"
else
	log "state changed across the restart:"; diff <(echo "$before") <(echo "$after") || true
	exit 1
fi
log "demo done"
