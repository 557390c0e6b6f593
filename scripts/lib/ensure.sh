# shellcheck shell=bash
# Helpers sourced by the scripts: log, wait for a condition, install what
# jaco needs on a fresh Debian machine (as root), and put a Go that can
# build it on PATH.

JACO_GO_VERSION=1.26.8

log() { printf '==> %s\n' "$*" >&2; }

# wait_for SECONDS CMD...: run CMD every 0.2 s ($WAIT_EVERY when set) until it succeeds, or give
# up (saying on what) after SECONDS.
wait_for() {
	local deadline=$((SECONDS + $1)); shift
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || { log "timed out waiting for: $*"; return 1; }
		sleep "${WAIT_EVERY:-0.2}" # a caller timing the wait may poll finer
	done
}

apt_updated=
# ensure_pkgs installs the Debian packages that are missing.
ensure_pkgs() {
	local missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
	done
	((${#missing[@]})) || return 0
	if [[ $(id -u) -ne 0 ]]; then
		log "missing Debian packages: ${missing[*]} (run as root to install them)"
		return 1
	fi
	if [[ -z $apt_updated ]]; then
		log "apt-get update"
		apt-get update -qq
		apt_updated=1
	fi
	log "installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# ensure_promtool puts promtool (Prometheus's checker, which the metrics
# test runs) in /usr/local/bin: taken out of Debian's prometheus package
# rather than installing it, which would also enable a Prometheus server.
ensure_promtool() {
	command -v promtool >/dev/null && return 0
	if [[ $(id -u) -ne 0 ]]; then
		log "missing promtool (run as root to install it)"
		return 1
	fi
	if [[ -z $apt_updated ]]; then
		apt-get update -qq
		apt_updated=1
	fi
	local tmp
	tmp=$(mktemp -d)
	chown _apt "$tmp" 2>/dev/null || true # apt downloads as its own user
	log "installing promtool from Debian's prometheus package"
	(cd "$tmp" && apt-get download -qq prometheus >/dev/null && dpkg-deb -x prometheus_*.deb root)
	install -m 0755 "$tmp/root/usr/bin/promtool" /usr/local/bin/promtool
	rm -rf "$tmp"
}

# go_minor prints the minor version of the go on PATH (21 for go1.21.x).
go_minor() {
	go env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p'
}

# ensure_go puts a Go on PATH that builds this module. A Go of 1.21 or
# later fetches the exact toolchain go.mod asks for by itself (through the
# module proxy). Debian 12 only packages Go 1.19, which cannot; it is used
# once to fetch that toolchain as a module, and the fetched Go is used.
ensure_go() {
	export PATH="$PATH:/usr/local/go/bin:$HOME/go/bin"
	local minor
	minor=$(go_minor)
	if [[ -n $minor && $minor -ge 21 ]]; then
		return 0
	fi
	ensure_pkgs golang-go ca-certificates git
	local mod="golang.org/toolchain@v0.0.1-go${JACO_GO_VERSION}.linux-$(dpkg --print-architecture)"
	local dir
	dir="$(go env GOMODCACHE)/${mod}"
	if [[ ! -x $dir/bin/go ]]; then
		log "fetching Go ${JACO_GO_VERSION} through the module proxy"
		(cd / && GOFLAGS=-mod=mod go mod download "$mod")
		# Module zips keep no file modes; the toolchain needs its binaries executable.
		chmod -R u+w "$dir"
		chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/*
	fi
	export PATH="$dir/bin:$PATH"
	[[ $(go_minor) -ge 21 ]] || { log "could not set up Go ${JACO_GO_VERSION}"; return 1; }
}
