#!/usr/bin/env bash
# How long jacod takes to stop beside a paused peer (ADR 0058).
#
#   pausestop.sh BENCH_BIN_DIR JACOD [ROUNDS]
#
# BENCH_BIN_DIR holds jaco-bench, jacod and jaco (go build -o DIR ./cmd/...);
# a short `jaco-bench -keep` run there leaves a three-manager cluster's data
# dirs, which each round restarts with JACOD. Then one follower is paused
# (SIGSTOP), the leader sent SIGTERM, a second later the other follower; the
# paused one is resumed and stopped last. Each member's "jacod stopped" and
# "jacod still stopping" lines are printed. Loopback only.
set -euo pipefail
bin=$1 jacod=$2 rounds=${3:-1}
work=$(mktemp -d)
trap 'pkill -CONT -f "$work/" 2>/dev/null; pkill -TERM -f "$work/" 2>/dev/null; sleep 1; rm -rf "$work"' EXIT
"$bin/jaco-bench" -work "$work/w" -keep -jacod "$bin/jacod" -jaco "$bin/jaco" -out "$work/out" \
	-phases rate -systems jaco -rates 1000 -clients 100 -duration 5s >/dev/null
d=$work/w/rate-jaco-1000
pid() { pgrep -f "$d/m$1 " || true; }
gone() { for m in "$@"; do [ -z "$(pid "$m")" ] || return 1; done; }
for r in $(seq 1 "$rounds"); do
	for m in 1 2 3; do
		addr=$(grep -h '^=== ' "$d/m$m.log" | head -1 | grep -o 'listen-addr [^ ]*' | cut -d' ' -f2)
		"$jacod" --data-dir "$d/m$m" --listen-addr "$addr" --node-name "m$m" >"$work/r$r-m$m.log" 2>&1 &
	done
	lead=
	for _ in $(seq 1 200); do
		lead=$(grep -l 'leader subsystems started' "$work"/r"$r"-m?.log 2>/dev/null | head -1 || true)
		[ -n "$lead" ] && break
		sleep 0.1
	done
	[ -n "$lead" ] || { echo "round $r: no leader within 20 s" >&2; exit 1; }
	sleep 2 # the followers caught up
	lm=${lead##*-m}; lm=${lm%.log}
	set -- $(for m in 1 2 3; do [ "$m" != "$lm" ] && echo "$m"; done)
	paused=$1 other=$2
	kill -STOP "$(pid "$paused")"; sleep 1
	kill -TERM "$(pid "$lm")"; sleep 1
	kill -TERM "$(pid "$other")"
	for _ in $(seq 1 300); do gone "$lm" "$other" && break; sleep 0.1; done
	kill -CONT "$(pid "$paused")"; kill -TERM "$(pid "$paused")"
	for _ in $(seq 1 300); do gone "$paused" && break; sleep 0.1; done
	for role in "leader $lm" "follower $other" "paused $paused"; do
		set -- $role
		echo "round $r, $1 m$2: $(grep -h 'jacod stopped\|still stopping' "$work/r$r-m$2.log" | sed 's/^time=[^ ]* //' | tr '\n' ' ')"
	done
done
