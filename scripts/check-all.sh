#!/usr/bin/env bash
# Runs `make test`'s jobs after check-generated: the tests (go test -race
# over every package) in the foreground, and lint then fuzzing beside them
# under nice (docs/adr/0065-test-command-time.md). On two cores the three
# used to run one after another; but the integration tests mostly wait on
# the processes they start, and the niced jobs take the CPU those waits
# leave, never the tests' own. Each fuzz target still runs its FUZZTIME
# seconds.
#
# The tests' output streams as it comes; lint's and fuzzing's are printed
# whole at the end, each with how long its job took. The exit status is
# non-zero when any job failed, and every job runs to its end first, so
# one run reports every failure.
#
# Usage: scripts/check-all.sh (`make test` runs it, after check-generated).
set -uo pipefail
cd "$(dirname "$0")/.."

GO="${GO:-go}"
MAKE="${MAKE:-make}"
FUZZTIME="${FUZZTIME:-10}"
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

# job NAME CMD...: runs CMD, records its exit status and seconds.
job() {
	local name=$1 start=$SECONDS rc=0
	shift
	"$@" || rc=$?
	echo "$rc $((SECONDS - start))" >"$logs/$name.status"
}

(
	job lint nice -n 10 "$MAKE" --no-print-directory lint
	# One target per core at once, one fuzzing worker each (scripts/fuzz.sh).
	job fuzz env FUZZ_JOBS="$(nproc)" nice -n 10 ./scripts/fuzz.sh "$FUZZTIME"
) >"$logs/side.log" 2>&1 &
side=$!

# -vet=off: go test's own vet pass is a subset of lint's `go vet ./...`,
# which runs beside it: on two cores that repeat takes CPU from the tests.
job tests "$GO" test -race -vet=off -count=1 -timeout 20m ./...
wait "$side"

echo "==> lint and fuzzing (run beside the tests):"
cat "$logs/side.log"
failed=0
for name in tests lint fuzz; do
	rc=1 secs=?
	[[ -r $logs/$name.status ]] && read -r rc secs <"$logs/$name.status"
	if ((rc == 0)); then
		echo "==> $name: ok in ${secs}s"
	else
		echo "==> $name: FAILED (exit $rc) after ${secs}s"
		failed=1
	fi
done
exit "$failed"
