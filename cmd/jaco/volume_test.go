package main

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// --mount type=volume: a named volume with its driver options, or an
// anonymous one; the keys of other types are refused.
func TestParseVolumeMount(t *testing.T) {
	for in, want := range map[string]*api.Mount{
		"type=volume,source=db-data,target=/var/lib/db": {Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "db-data", Target: "/var/lib/db"},
		"type=volume,src=cache,dst=/c,readonly,volume-opt=type=tmpfs,volume-opt=o=size=64m": {
			Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "cache", Target: "/c", Readonly: true,
			VolumeOptions: map[string]string{"type": "tmpfs", "o": "size=64m"},
		},
		"type=volume,target=/scratch": {Type: api.MountType_MOUNT_TYPE_VOLUME, Target: "/scratch"},
	} {
		got, err := parseMount(in)
		if err != nil || !proto.Equal(got, want) {
			t.Errorf("parseMount(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, says := range map[string]string{
		"type=volume,source=v":                             "needs target=",
		"type=volume,source=v,target=/v,tmpfs-size=1m":     "tmpfs-size is not a volume mount's",
		"type=volume,target=/v,bind-create-host-path":      "not a volume mount's",
		"type=volume,target=/v,volume-opt=novalue":         "want volume-opt=KEY=VALUE",
		"type=bind,source=/a,target=/b,volume-opt=type=ab": "volume-opt is a volume mount's",
	} {
		if _, err := parseMount(in); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("parseMount(%q): %v; want an error saying %q", in, err, says)
		}
	}
}
