package main

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// --mount's volume-nocopy, as Docker spells it: alone or with a boolean,
// a volume mount's only.
func TestParseVolumeNoCopy(t *testing.T) {
	for in, want := range map[string]*api.Mount{
		"type=volume,source=g,target=/data,volume-nocopy":       {Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "g", Target: "/data", VolumeNoCopy: true},
		"type=volume,target=/data,volume-nocopy=true":           {Type: api.MountType_MOUNT_TYPE_VOLUME, Target: "/data", VolumeNoCopy: true},
		"type=volume,source=g,target=/data,volume-nocopy=false": {Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "g", Target: "/data"},
	} {
		got, err := parseMount(in)
		if err != nil || !proto.Equal(got, want) {
			t.Errorf("parseMount(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, says := range map[string]string{
		"type=volume,target=/data,volume-nocopy=maybe": "want true or false",
		"type=bind,source=/a,target=/b,volume-nocopy":  "volume-nocopy is a volume mount's",
		"type=tmpfs,target=/b,volume-nocopy":           "volume-nocopy is a volume mount's",
		"type=volume,target=/data,nocopy":              "unknown key",
	} {
		if _, err := parseMount(in); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("parseMount(%q): %v; want an error saying %q", in, err, says)
		}
	}
}
