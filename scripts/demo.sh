#!/usr/bin/env bash
# The main job, end to end on one machine: a local cluster running a
# service. Builds jaco and a small busybox web image, starts a private
# containerd, and runs four jacod "hosts" (a manager and three workers),
# each in its own network namespace on a private bridge (198.18.0.0/25;
# their containers get subnets from 198.18.0.128/25; the range is
# reserved for benchmarking and never routed; overlay networks take
# 198.19.0.0/16). It creates a web service with two replicas published on
# port 8080 through the routing mesh, fetches pages through every worker's
# port (the one without a replica too), kills a
# container and then a whole worker, brings the worker back and removes
# another with `jaco node remove` (drained start-first), and shows
# `jaco service ps` after each.
# Pass --keep to leave everything running (cleanup commands are printed).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

keep=
[[ ${1:-} == --keep ]] && keep=1
[[ $(id -u) == 0 ]] || { log "run as root: the demo makes network namespaces and runs containers"; exit 1; }

ensure_pkgs git gcc libc6-dev ca-certificates curl iproute2 iptables util-linux containerd runc containernetworking-plugins busybox-static
ensure_go
log "building jacod, jaco and jaco-dev"
mkdir -p bin
go build -o bin/ ./cmd/jacod ./cmd/jaco
go build -o bin/jaco-dev ./devtool

base=$(mktemp -d /tmp/jaco-demo.XXXXXX)
tag="jd$$"
names=(m1 w1 w2 w3)
pids=()
ctrd_pid=
cleanup() {
	if [[ -n $keep ]]; then
		log "left running: jacod pids ${pids[*]}, containerd pid $ctrd_pid; namespaces $tag-*; data under $base"
		log "try: ./bin/jaco --data-dir $base/m1 service ps web"
		return
	fi
	./bin/jaco --data-dir "$base/m1" --timeout 5s service rm web >/dev/null 2>&1 && sleep 3 || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[[ -n $ctrd_pid ]] && kill "$ctrd_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	for ns in $(ip netns list | awk '{print $1}' | grep "^$tag-" || true); do ip netns delete "$ns"; done
	# The containers' network namespaces are bind mounts under the data dirs.
	grep -o " $base/[^ ]*" /proc/mounts | xargs -r umount -l
	rm -rf "$base"
}
trap cleanup EXIT

jaco() { local n=$1; shift; ./bin/jaco --data-dir "$base/$n" "$@"; }
run() { local n=$1; shift; printf '\n[%s]$ jaco %s\n' "$n" "$*"; jaco "$n" "$@"; }
inns() { local n=$1; shift; ip netns exec "$tag-$n" "$@"; }
# daemon N CMD...: CMD in host N's network namespace but the machine's
# mount namespace (nsenter, not `ip netns exec`, which makes a private
# one): the network namespaces jacod makes for containers are bind mounts
# containerd and runc must see.
# Started in the background, it execs, so $! is the daemon's own pid.
daemon() { local n=$1; shift; exec nsenter --net="/run/netns/$tag-$n" "$@"; }
addr() { echo "198.18.0.$(($1 + 1))"; }

log "network: a bridge in namespace $tag-hub, one namespace per host"
ip netns add "$tag-hub"
ip -n "$tag-hub" link add br0 type bridge
ip -n "$tag-hub" link set br0 up
for i in "${!names[@]}"; do
	n=${names[i]}
	ip netns add "$tag-$n"
	ip -n "$tag-hub" link add "v$i" type veth peer name eth0 netns "$tag-$n"
	ip -n "$tag-hub" link set "v$i" master br0 up
	ip -n "$tag-$n" addr add "$(addr "$i")/25" dev eth0   # containers take .128/25
	ip -n "$tag-$n" link set eth0 up
	ip -n "$tag-$n" link set lo up
done

log "a private containerd (its own root, state and socket under $base)"
./bin/jaco-dev containerd --dir "$base/containerd" >"$base/containerd.out" 2>"$base/containerd.log" &
ctrd_pid=$!
wait_for 30 test -s "$base/containerd.out"
sock=$(head -1 "$base/containerd.out")
./bin/jaco-dev image build -o "$base/web.tar"

start() {
	local i=$1 n=${names[$1]}
	mkdir -p "$base/$n"
	daemon "$n" ./bin/jacod --data-dir "$base/$n" --listen-addr "$(addr "$i"):7000" --node-name "$n" \
		--containerd-address "$sock" --heartbeat-period 1s >>"$base/$n.log" 2>&1 &
	pids[i]=$!
	wait_for 30 jaco "$n" --timeout 1s cluster status
}
log "starting jacod on ${names[*]} (logs: $base/<host>.log)"
for i in "${!names[@]}"; do start "$i"; done

printf '\n[m1]$ jaco cluster init --quiet --overlay-pool 198.19.0.0/16\n'
jaco m1 cluster init --quiet --overlay-pool 198.19.0.0/16
for n in w1 w2 w3; do
	token=$(jaco m1 node issue-join-token --role worker 2>/dev/null)
	printf '[%s]$ jaco node join --peer %s:7000 --token ...\n' "$n" "$(addr 0)"
	jaco "$n" node join --peer "$(addr 0):7000" --token "$token"
	printf '[%s]$ jaco image load web.tar\n' "$n"
	jaco "$n" image load "$base/web.tar"
done
run m1 node update --availability pause m1   # the manager runs no replicas
# busybox httpd as PID 1 ignores SIGINT and SIGQUIT: short grace periods,
# or every stop of a replica waits out the default 2 m + 30 s ladder.
run m1 service create --name web --replicas 2 -p 8080:80 --restart-delay 1s \
	--stop-grace-period 2s --abort-grace-period 2s jaco.local/busybox:latest

running() { [[ $(jaco m1 service ps web --format json | grep -c '"state": "running"') == "$1" ]]; }
log "waiting for 2 running replicas"
wait_for 60 running 2
run m1 service ps web

# fetch: ask every node for the page through its published port.
fetch() {
	local i n
	for i in 1 2 3; do
		n=${names[i]}
		printf '  http://%s:8080/ (%s): ' "$(addr "$i")" "$n"
		inns m1 curl -s -m 2 "http://$(addr "$i"):8080/" || echo "(nothing answers here)"
	done
}
log "fetching through the published port from the manager's host: every worker answers (the routing mesh)"
fetch

# container_ns ID: the containerd namespace holding container ID.
container_ns() {
	local ns
	for ns in $(ctr -a "$sock" namespaces ls -q); do
		ctr -a "$sock" -n "$ns" containers ls -q | grep -qx "$1" && { echo "$ns"; return; }
	done
}
victim=$(jaco m1 service ps web --format json | grep -o '"id": "[^"]*"' | head -1 | cut -d'"' -f4)
log "killing replica $victim's container with SIGKILL (restart delay 1s)"
ctr -a "$sock" -n "$(container_ns "$victim")" task kill -s SIGKILL "$victim"
wait_for 60 bash -c "! ./bin/jaco --data-dir $base/m1 service ps web --format json | grep -q $victim && [[ \$(./bin/jaco --data-dir $base/m1 service ps web --format json | grep -c '\"state\": \"running\"') == 2 ]]"
run m1 service ps web

node=$(jaco m1 service ps web --format json | grep -o '"node": "w[0-9]"' | head -1 | cut -d'"' -f4)
i=${node#w}
log "killing worker $node (SIGKILL jacod, and its containers, as if the host died)"
kill -9 "${pids[i]}"
for id in $(jaco m1 service ps web --format json | grep -B2 "\"node\": \"$node\"" | grep -o '"id": "[^"]*"' | cut -d'"' -f4); do
	ctr -a "$sock" -n "$(container_ns "$id")" task kill -s SIGKILL "$id" || true
done
log "waiting for $node to be marked down and its replica to move"
wait_for 60 bash -c "[[ \$(./bin/jaco --data-dir $base/m1 service ps web --format json | grep -c '\"state\": \"running\"') == 2 ]] && ! ./bin/jaco --data-dir $base/m1 service ps web | grep -q ' $node '"
run m1 status
run m1 service ps web
fetch

log "bringing $node back, then taking another worker out with one command (drain start-first, then remove)"
start "$i"
wait_for 60 bash -c "./bin/jaco --data-dir $base/m1 status | grep -q '^$node .* ready '"
other=$(jaco m1 service ps web --format json | grep -o '"node": "w[0-9]"' | head -1 | cut -d'"' -f4)
SECONDS_BEFORE=$SECONDS
run m1 node remove "$other" --drain-timeout 1m
log "the drain and removal took $((SECONDS - SECONDS_BEFORE)) s"
run m1 service ps web
fetch

log "done: a killed container was replaced, a dead worker's replica moved, a worker was drained and removed, and service ps said so"
