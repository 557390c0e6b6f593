#!/usr/bin/env bash
# Fails when git tracks a file larger than 1 MiB or an executable binary
# (ELF, Mach-O, PE, or anything with the executable bit that is not a
# script starting with #!). Build outputs belong in .gitignore: once
# committed, a binary stays in every clone's history for good.
#
# Also fails when a hand-written Go file (not generated *.pb.go, not the
# pinned tool module under vendor-tools/) is over 500 lines: a file that
# long holds more than one concept, and is split by concept instead.
#
# Usage: scripts/check-tracked-files.sh (`make lint` runs it). Sizes and
# modes are the index's; the leading bytes are read from the work tree.
set -euo pipefail
cd "$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"

max_bytes=$((1 << 20))
max_go_lines=500
bad=0
long=0
gofiles=()

refuse() {
	echo "tracked file $1: $2" >&2
	bad=1
}

# Every magic number tested below is free of NUL bytes, which bash's read
# drops, so the builtin can read them without a process per file.
export LC_ALL=C
while read -r size mode path; do
	# Symlinks (120000) and submodules (160000) hold no content of their own.
	[[ $mode == 100644 || $mode == 100755 ]] || continue
	if ((size > max_bytes)); then
		refuse "$path" "$size bytes, over the 1 MiB limit"
	fi
	head=
	if [[ -f $path ]]; then
		IFS= read -r -N 4 head <"$path" || true
		if [[ $path == *.go && $path != *.pb.go && $path != vendor-tools/* ]]; then
			gofiles+=("./$path") # never an awk var=value operand
		fi
	fi
	case $head in
	$'\x7fELF') refuse "$path" "ELF binary" ;;
	$'\xfe\xed\xfa\xce' | $'\xfe\xed\xfa\xcf' | $'\xce\xfa\xed\xfe' | $'\xcf\xfa\xed\xfe' | $'\xca\xfe\xba\xbe')
		refuse "$path" "Mach-O binary" ;;
	MZ*) refuse "$path" "PE (Windows) binary" ;;
	*)
		if [[ $mode == 100755 && $head != '#!'* ]]; then
			refuse "$path" "executable but not a script starting with #!"
		fi
		;;
	esac
done < <(git ls-files --format='%(objectname) %(objectmode) %(path)' |
	git cat-file --batch-check='%(objectsize) %(rest)')

if ((bad)); then
	echo "remove these files from git (git rm) and list build outputs in .gitignore" >&2
fi

# One awk over every Go file rather than a wc per file: a file's count is
# known once awk reaches the next file's first line, or the end.
if ((${#gofiles[@]})); then
	while read -r lines path; do
		echo "tracked file ${path#./}: $lines lines, over the $max_go_lines-line limit for hand-written Go" >&2
		long=1
	done < <(awk -v max="$max_go_lines" '
		FNR == 1 && NR > 1 && n > max { print n, prev }
		{ prev = FILENAME; n = FNR }
		END { if (n > max) print n, prev }' "${gofiles[@]}")
fi
if ((long)); then
	echo "split each long Go file into files of one concept each" >&2
fi

if ((bad || long)); then
	exit 1
fi
