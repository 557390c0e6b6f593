#!/usr/bin/env bash
# Runs every native Go fuzz target of the module (func FuzzX(f *testing.F))
# for N seconds each, default 10: `scripts/fuzz.sh [seconds]`. Targets are
# found with `go test -list`, so a new one is run without editing this
# script. `go test -fuzz` takes one package and one target at a time, hence
# the loop. A crash fails the run and go test writes the input under the
# package's testdata/fuzz/<FuzzName>/, where it becomes a regression seed
# that plain `go test` runs from then on.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-10}"
if ! [[ "$secs" =~ ^[1-9][0-9]*$ ]]; then
	echo "usage: $0 [seconds per target, default 10]" >&2
	exit 2
fi
GO="${GO:-go}"

# `go test -list` prints a package's matching names, then "ok <pkg> <time>";
# packages without tests print "? <pkg> [no test files]".
listing="$("$GO" test -run '^$' -list '^Fuzz' ./...)"
targets=()
names=()
while read -r first second _; do
	case "$first" in
	Fuzz*) names+=("$first") ;;
	ok)
		for n in "${names[@]}"; do targets+=("$second $n"); done
		names=()
		;;
	*) names=() ;;
	esac
done <<<"$listing"

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
fuzz_run() { "$GO" test -run '^$' -fuzz "^${2}\$" -fuzztime "${secs}s" "$1"; }
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

for t in "${targets[@]}"; do
	read -r pkg name <<<"$t"
	echo "fuzz: $name in $pkg"
	fuzz_one "$pkg" "$name"
done
