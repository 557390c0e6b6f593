#!/usr/bin/env bash
# Volume move throughput (docs/bench/volume-move.md): a 200 MiB volume
# moved between two jacod nodes in network namespaces by a drain, beside
# tar | nc between the same namespaces, three rounds, medians written to
# docs/bench/volume-move.md. Root, as the integration tests.
#
#   sudo scripts/bench-volume-move.sh
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ $(id -u) -ne 0 ]]; then
	echo "run as root: network namespaces and containerd need it" >&2
	exit 1
fi
out=${BENCH_OUT:-$PWD/docs/bench/volume-move.md}
JACO_BENCH_OUT=$out go test -run '^$' -bench '^BenchmarkVolumeMove$' -benchtime 1x -count 1 -timeout 20m -v ./integration/
cat "$out"
