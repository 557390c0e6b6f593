package controlapi

import (
	"strings"
	"testing"

	"github.com/jaco-project/jaco/api"
)

// volume_no_copy is a volume mount's: accepted there, refused on a bind
// or a tmpfs, where it would say nothing.
func TestVolumeNoCopyOnVolumeMountsOnly(t *testing.T) {
	ok := &api.ServiceSpec{Mounts: []*api.Mount{{Type: api.MountType_MOUNT_TYPE_VOLUME, Source: "g", Target: "/data", VolumeNoCopy: true}}}
	if err := validateMounts(ok); err != nil {
		t.Fatalf("volume mount with volume_no_copy: %v", err)
	}
	for _, m := range []*api.Mount{
		{Source: "/srv", Target: "/data", VolumeNoCopy: true},
		{Type: api.MountType_MOUNT_TYPE_TMPFS, Target: "/data", VolumeNoCopy: true},
	} {
		err := validateMounts(&api.ServiceSpec{Mounts: []*api.Mount{m}})
		if err == nil || !strings.Contains(err.Error(), "volume-nocopy") {
			t.Errorf("%v: %v; want volume-nocopy refused", m, err)
		}
	}
}
