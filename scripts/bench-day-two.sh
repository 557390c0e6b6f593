#!/usr/bin/env bash
# Day-two failure figures (docs/bench/day-two.md): how long from
# a worker's death to its replica running elsewhere, and from a worker's
# partition from the managers (its monitors still hear it) to its
# replica's replacement, each measured from the moment the network broke.
# Runs integration/TestMonitorsTellAPartitionFromADeath (four jacod
# processes in network namespaces, hook-bundle replicas; partition grace
# 8 s, down grace 2 s, heartbeat period 500 ms) -rounds times and writes
# the medians and the worst round to docs/bench/day-two/results.{md,jsonl};
# also the time a partitioned worker that its monitors stop hearing takes
# to be replaced, from its being marked partitioned.
#
#   sudo scripts/bench-day-two.sh               # 5 rounds (about 4 min)
#   sudo scripts/bench-day-two.sh -rounds 2
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

rounds=5
if [[ ${1:-} == -rounds ]]; then rounds=$2; fi
if [[ $(id -u) -ne 0 ]]; then
	echo "run as root: the test makes network namespaces" >&2
	exit 1
fi
ensure_pkgs iproute2 nftables procps git gcc libc6-dev ca-certificates
ensure_go

out=${BENCH_OUT:-docs/bench/day-two}
mkdir -p "$out"
jsonl="$out/results.jsonl"
: >"$jsonl"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((i = 1; i <= rounds; i++)); do
	echo "round $i of $rounds" >&2
	JACO_DAYTWO_OUT="$PWD/$jsonl" go test -count=1 -run 'TestMonitorsTellAPartitionFromADeath$' -timeout 10m ./integration/ >&2
done

# Each line: {"partition_noticed_ns":…,"partition_replaced_ns":…,"down_noticed_ns":…,"down_replaced_ns":…}
summary() { # field → "median worst" in seconds
	grep -o "\"$1\":[0-9]*" "$jsonl" | cut -d: -f2 | sort -n |
		awk '{v[NR]=$1} END {m = (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2; printf "%.2f %.2f", m/1e9, v[NR]/1e9}'
}
row() { # label field
	read -r med worst <<<"$(summary "$2")"
	echo "| $1 | $med | $worst |"
}
{
	echo "# Day two: a worker partitioned or dead ($(date -u +%Y-%m-%d), jaco $(git rev-parse --short HEAD), $rounds rounds, load before: $load_before)"
	echo
	echo "Seconds from the moment the network broke (heartbeat period 500 ms, so the dispatcher's grace is 1.5 s; partition grace 8 s; down grace 2 s)."
	echo
	echo "| event | median s | worst s |"
	echo "|---|---:|---:|"
	row "partitioned worker: marked partitioned" partition_noticed_ns
	row "partitioned worker: its replica replaced" partition_replaced_ns
	row "dead worker: marked down" down_noticed_ns
	row "dead worker: its replica replaced" down_replaced_ns
	row "partitioned, then unheard by its monitors: replaced, from being marked partitioned" silent_replaced_ns
} >"$out/results.md"
cat "$out/results.md"
