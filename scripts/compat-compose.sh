#!/usr/bin/env bash
# Deploys compose files on jaco and on this machine's Docker swarm, file by
# file, and prints one markdown table row per file (docs/compat/compose.md):
# whether `jaco stack deploy` and `docker stack deploy` accepted it as
# written, what each said when it did not, and how many services each
# left behind after a refusal (a refused stack must leave none).
#
#   scripts/compat-compose.sh FILE...     # as root; each file deployed from its own directory
#
# COMPAT_ROOT is cut from the front of each file's name in the table;
# JACO_BIN, a directory holding jacod and jaco, is used instead of building
# the working tree (to measure another commit).
#
# The files are public ones fetched for the measurement, never committed
# (docs/compat/compose.md names them). jaco runs as one manager on
# loopback (a deploy is the manager accepting the stack; no image is
# pulled: the machine reaches no registry). The swarm is made with
# `docker swarm init --advertise-addr 127.0.0.1` when the engine has none,
# and left with `docker swarm leave --force` at the end, as it was found.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

(($#)) || { log "usage: $0 COMPOSE_FILE..."; exit 2; }
[[ $(id -u) == 0 ]] || { log "run as root"; exit 1; }
ensure_go

work=$(mktemp -d /tmp/jaco-compat.XXXXXX)
jacod_pid=
made_swarm=
cleanup() {
	[[ -n $jacod_pid ]] && kill "$jacod_pid" 2>/dev/null && wait "$jacod_pid" 2>/dev/null || true
	[[ -n $made_swarm ]] && docker swarm leave --force >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

bin=${JACO_BIN:-$work/bin}
if [[ -z ${JACO_BIN:-} ]]; then
	log "building jacod and jaco from the working tree"
	go build -o "$bin/" ./cmd/jacod ./cmd/jaco
fi
port=$((17000 + RANDOM % 2000))
"$bin/jacod" --data-dir "$work/m1" --listen-addr "127.0.0.1:$port" --node-name m1 \
	--log-level warn 2>"$work/jacod.log" &
jacod_pid=$!
jaco() { "$bin/jaco" --data-dir "$work/m1" "$@"; }
wait_for 30 jaco cluster status
jaco cluster init >/dev/null

if [[ $(docker info --format '{{.Swarm.LocalNodeState}}') == inactive ]]; then
	docker swarm init --advertise-addr 127.0.0.1 >/dev/null
	made_swarm=1
fi

# first_error OUTPUT: the first line that says why (not a warning), else
# the last line, cut for a table cell.
first_error() {
	local line
	line=$(grep -viE '^(warning|ignoring)' <<<"$1" | grep -m1 -iE 'error|unsupported|invalid|not supported|refus|failed' || true)
	[[ -n $line ]] || line=$(grep -v '^[[:space:]]*$' <<<"$1" | tail -1)
	cut -c1-160 <<<"$line" | sed 's/|/\\|/g'
}

# warnings OUTPUT: how many lines warn of keys ignored.
warnings() { grep -ciE '^(warning|ignoring)' <<<"$1" || true; }

# cell RC OUTPUT LEFT: a table cell for one deploy.
cell() {
	if (($1 == 0)); then
		echo "deployed"
	else
		local why
		why=$(first_error "$2")
		echo "refused: ${why:-exit $1}$( (($3)) && echo " (left $3 services)")"
	fi
}

printf '| file | jaco | Docker swarm |\n|---|---|---|\n'
i=0
for f in "$@"; do
	i=$((i + 1))
	dir=$(dirname "$f") file=$(basename "$f") name="compat$i"
	out=$(cd "$dir" && jaco stack deploy -d -c "$file" "$name" 2>&1) && rc=0 || rc=$?
	left=$(jaco stack services "$name" -q 2>/dev/null | grep -c . || true)
	jcell=$(cell "$rc" "$out" "$left")
	jaco stack rm "$name" >/dev/null 2>&1 || true
	# Warnings (ignored keys) go in the cell too: nothing silently changed.
	warns=$(warnings "$out")
	((rc == 0 && warns > 0)) && jcell="$jcell ($warns warnings)"

	out=$(cd "$dir" && docker stack deploy -c "$file" "$name" 2>&1) && rc=0 || rc=$?
	left=$(docker stack services "$name" -q 2>/dev/null | grep -c . || true)
	dcell=$(cell "$rc" "$out" "$left")
	warns=$(warnings "$out")
	((rc == 0 && warns > 0)) && dcell="$dcell ($warns warnings)"
	docker stack rm "$name" >/dev/null 2>&1 || true
	printf '| %s | %s | %s |\n' "${f#"${COMPAT_ROOT:-}"}" "$jcell" "$dcell"
done
# Networks of removed Docker stacks go asynchronously; give them a moment
# before the swarm is left, so none is left behind either.
wait_for 30 bash -c '! docker network ls --format "{{.Name}}" | grep -q "^compat"' || true
