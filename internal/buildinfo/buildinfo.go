// Package buildinfo says which build of jaco is running: the version, the
// commit it was built from and the Go that built it, for `jaco version`
// and `jacod --version`.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Version is the release this binary is, set when releasing with
//
//	go build -ldflags "-X github.com/jaco-project/jaco/internal/buildinfo.Version=v1.2.3"
//
// Left at "dev", the module version from the build info is used when there
// is one: a tagged module (go install ...@v1.2.3), or the pseudo-version the
// go command stamps on a build from a git checkout (v0.0.0-<time>-<commit>,
// +dirty with uncommitted changes).
var Version = "dev"

// Info describes one build.
type Info struct {
	// Version is the release, or "dev" for a build from a checkout.
	Version string
	// Commit is the VCS revision built, "" when the build did not record
	// one (go test, -buildvcs=false, a build outside a checkout).
	Commit string
	// Modified is a build from a checkout with uncommitted changes: Commit
	// alone does not say what was built.
	Modified bool
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
	// Platform is GOOS/GOARCH.
	Platform string
}

// Read returns this binary's Info.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return fromBuildInfo(Version, bi)
}

// fromBuildInfo is Read on given inputs, for tests.
func fromBuildInfo(version string, bi *debug.BuildInfo) Info {
	info := Info{Version: version, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi == nil {
		return info
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	// "(devel)" is what a build without VCS stamping records: no version.
	if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// Format renders info for program (jaco, jacod) as three lines:
//
//	jaco version v1.2.3
//	commit: 0123abcd... (modified)
//	go: go1.26.1 linux/amd64
func (info Info) Format(program string) string {
	commit := info.Commit
	if commit == "" {
		commit = "unknown"
	}
	if info.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("%s version %s\ncommit: %s\ngo: %s %s\n", program, info.Version, commit, info.GoVersion, info.Platform)
}
