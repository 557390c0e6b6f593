#!/usr/bin/env bash
# Fails when code, a script or the Makefile cites one of this project's
# issues by number (the word issue followed by its number): a reader of the
# repository cannot look an issue up, so a comment says the reason itself
# or cites the ADR or docs/design.md section that records it. Links to
# upstream trackers (go.dev/issue/N, github.com/o/r/issues/N) can be opened
# and are allowed.
#
# Usage: scripts/check-issue-refs.sh (`make lint` runs it).
set -euo pipefail
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"

# The pattern wants a space after the word, so upstream links
# (go.dev/issue/N, .../issues/N) never match. git grep exits 1 when
# nothing matches; anything above is its own failure.
rc=0
hits="$(git grep -nIE '\b[Ii]ssues? #?[0-9]+' -- '*.go' '*.proto' '*.sh' Makefile ':!vendor-tools')" || rc=$?
if ((rc > 1)); then
	echo "check-issue-refs: git grep failed (exit $rc)" >&2
	exit "$rc"
fi
if [[ -n $hits ]]; then
	echo "$hits" >&2
	echo "these lines cite a project issue by number: say the reason, or cite the ADR or docs/design.md section" >&2
	exit 1
fi
