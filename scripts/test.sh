#!/usr/bin/env bash
# Runs every jaco test, as CI does: installs what the tests need on a fresh
# Debian machine (as root), then `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

ensure_pkgs make git gcc libc6-dev protobuf-compiler ca-certificates iproute2 nftables \
	containerd runc containernetworking-plugins busybox-static tini iptables util-linux docker-registry chromium
ensure_promtool
ensure_go
log "$(go version)"
# Everything the tests need is installed now: a test that would skip for a
# missing need fails instead (internal/testenv).
export JACO_TEST_STRICT=1
# Files tests leave for people to look at (the dashboard's screenshot);
# kept after the run, unlike the tests' temporary directories.
export JACO_TEST_ARTIFACTS="${JACO_TEST_ARTIFACTS:-$PWD/test-artifacts}"
mkdir -p "$JACO_TEST_ARTIFACTS"
exec make test
