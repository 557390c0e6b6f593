package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFormat(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	rev := "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name    string
		version string
		bi      *debug.BuildInfo
		want    string
	}{
		{
			name:    "checkout with uncommitted changes, no module version stamped",
			version: "dev",
			bi: &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"},
			}},
			want: "jaco version dev\ncommit: " + rev + " (modified)\ngo: go1.26.1 " + platform + "\n",
		},
		{
			name:    "release set by -ldflags wins over the module version",
			version: "v1.2.3",
			bi: &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.0.0-2026"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"},
			}},
			want: "jaco version v1.2.3\ncommit: " + rev + "\ngo: go1.26.1 " + platform + "\n",
		},
		{
			name:    "checkout stamped with a pseudo-version",
			version: "dev",
			bi: &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v0.0.0-20261125064759-1a5d92b16dee+dirty"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "true"},
			}},
			want: "jaco version v0.0.0-20261125064759-1a5d92b16dee+dirty\ncommit: " + rev + " (modified)\ngo: go1.26.1 " + platform + "\n",
		},
		{
			name:    "go install of a module version, no VCS",
			version: "dev",
			bi:      &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "v1.4.0"}},
			want:    "jaco version v1.4.0\ncommit: unknown\ngo: go1.26.1 " + platform + "\n",
		},
		{
			name:    "no build info",
			version: "dev",
			want:    "jaco version dev\ncommit: unknown\ngo: " + runtime.Version() + " " + platform + "\n",
		},
	} {
		if got := fromBuildInfo(c.version, c.bi).Format("jaco"); got != c.want {
			t.Errorf("%s:\ngot  %q\nwant %q", c.name, got, c.want)
		}
	}
}

// Read works in a test binary, which records no VCS revision: the
// version falls back to Version.
func TestRead(t *testing.T) {
	info := Read()
	if info.Version == "" || info.GoVersion != runtime.Version() {
		t.Errorf("Read() = %+v, want a version and GoVersion %q", info, runtime.Version())
	}
}
