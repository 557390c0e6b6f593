#!/usr/bin/env bash
# Runs every native Go fuzz target of the module (func FuzzX(f *testing.F))
# for N seconds each, default 10: `scripts/fuzz.sh [seconds]`. Targets are
# read from the test files, so a new one is run without editing this
# script. `go test -fuzz` takes one package and one target at a time, hence
# the loop. A crash fails the run and go test writes the input under the
# package's testdata/fuzz/<FuzzName>/, where it becomes a regression seed
# that plain `go test` runs from then on.
#
# FUZZ_JOBS=N runs N targets at once, each with one fuzzing worker (go
# test -parallel 1) instead of one per core: `make test` fuzzes beside
# the tests, where a target's second worker found no core free, and the
# targets left when the tests end then take half as long
# (docs/adr/0065-test-command-time.md). Each target still runs N seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-10}"
if ! [[ "$secs" =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 [seconds per target, default 10]" >&2
	exit 2
fi
GO="${GO:-go}"
jobs="${FUZZ_JOBS:-1}"
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
	echo "FUZZ_JOBS=$jobs: give a positive number" >&2
	exit 2
fi
workers=()
((jobs == 1)) || workers=(-parallel 1)

# A target is a "func FuzzX(f *testing.F)" line of a package's test file:
# read from the source, as `go test -list` would need every package's test
# binary built first only to name them.
# go list on a line of its own: its failure stops the script (set -e),
# where a process substitution would hide it.
pkgs="$("$GO" list -f '{{.Dir}} {{.ImportPath}}' ./...)"
targets=()
while read -r dir pkg; do
	files=("$dir"/*_test.go)
	[[ -e ${files[0]} ]] || continue
	while read -r name; do
		targets+=("$pkg $name")
	done < <(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)([A-Za-z_][A-Za-z0-9_]* \*testing\.F) {$/\1/p' "${files[@]}" | sort)
done <<<"$pkgs"

if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz: no fuzz targets found" >&2
	exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${secs}s each"
# Go 1.26's fuzzing coordinator can fail a target with a bare "context
# deadline exceeded" when -fuzztime ends while a worker is mid-input on a
# busy machine (go.dev/issue/75804, fixed in Go 1.27): no input failed and
# none is written. A real finding always says "Failing input written to".
# Such a run is tried once more; anything else fails at once.
fuzz_run() { "$GO" test -run '^$' -fuzz "^${2}\$" -fuzztime "${secs}s" "${workers[@]}" "$1"; }
fuzz_one() {
	local pkg=$1 name=$2 log
	log="$(mktemp)"
	if fuzz_run "$pkg" "$name" 2>&1 | tee "$log"; then
		rm -f "$log"
		return 0
	fi
	if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written to' "$log"; then
		rm -f "$log"
		echo "fuzz: $name stopped on the fuzzing engine's deadline race with no failing input; once more"
		fuzz_run "$pkg" "$name"
		return
	fi
	rm -f "$log"
	return 1
}

# shard K runs targets K, K+jobs, K+2*jobs, ... one after another.
shard() {
	local i rc=0 pkg name
	for ((i = $1; i < ${#targets[@]}; i += jobs)); do
		read -r pkg name <<<"${targets[i]}"
		echo "fuzz: $name in $pkg"
		fuzz_one "$pkg" "$name" || rc=1
	done
	return "$rc"
}

if ((jobs == 1)); then
	shard 0
	exit
fi
# Each shard's output is printed whole once it ends, so a failure's lines
# stay together.
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
pids=()
for ((k = 0; k < jobs; k++)); do
	shard "$k" >"$logs/$k" 2>&1 &
	pids+=($!)
done
failed=0
for k in "${!pids[@]}"; do
	wait "${pids[k]}" || failed=1
	cat "$logs/$k"
done
exit "$failed"
