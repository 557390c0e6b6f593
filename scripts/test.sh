#!/usr/bin/env bash
# Runs every jaco test, as CI does: installs what the tests need on a fresh
# Debian machine (as root), then `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/ensure.sh

ensure_pkgs make git gcc libc6-dev protobuf-compiler ca-certificates iproute2 nftables
ensure_go
log "$(go version)"
exec make test
