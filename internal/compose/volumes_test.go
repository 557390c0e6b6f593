package compose

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// mountsJSON renders mounts as the test compares them.
func mountsJSON(t *testing.T, ms []*api.Mount) string {
	t.Helper()
	var out []string
	for _, m := range ms {
		b, err := protojson.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		// protojson's spacing is not stable: compact it.
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(v)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// TestVolumeForms: every way a service mounts a volume, and the volumes
// the stack then holds: namespaced as Docker names them, name: and
// external kept, driver options and labels carried.
func TestVolumeForms(t *testing.T) {
	st, warned, err := loadWarned(t, `services:
  db:
    image: x
    volumes:
      - db-data:/var/lib/postgresql/data
      - db-data:/ro:ro
      - type: volume
        source: scratch
        target: /scratch
        read_only: true
        volume: {nocopy: true}
      - /anon
      - type: volume
        target: /anon2
        volume: {nocopy: true}
      - shared:/shared:nocopy
      - media:/media
  web:
    image: x
    volumes: ["db-data:/data", "old:/old:nocopy"]
volumes:
  db-data:
    labels: {tier: data}
  scratch:
    driver: local
    driver_opts: {type: tmpfs, o: size=64m}
  shared:
    name: shared-cache
  old:
    external: true
  media:
    external: true
    name: corp-media
  unused:
`)
	if err != nil {
		t.Fatal(err)
	}
	var db *api.ServiceSpec
	for _, s := range st.Services {
		if s.Name == "st_db" {
			db = s
		}
	}
	want := strings.Join([]string{
		`{"target":"/var/lib/postgresql/data","source":"st_db-data","type":"MOUNT_TYPE_VOLUME"}`,
		`{"readonly":true,"target":"/ro","source":"st_db-data","type":"MOUNT_TYPE_VOLUME"}`,
		`{"readonly":true,"source":"st_scratch","target":"/scratch","type":"MOUNT_TYPE_VOLUME","volumeOptions":{"o":"size=64m","type":"tmpfs"},"volumeNoCopy":true}`,
		`{"target":"/anon","type":"MOUNT_TYPE_VOLUME"}`,
		`{"target":"/anon2","type":"MOUNT_TYPE_VOLUME","volumeNoCopy":true}`,
		`{"source":"shared-cache","target":"/shared","type":"MOUNT_TYPE_VOLUME","volumeNoCopy":true}`,
		`{"source":"corp-media","target":"/media","type":"MOUNT_TYPE_VOLUME"}`,
	}, "\n")
	if got := mountsJSON(t, db.GetMounts()); normalizeJSONLines(t, got) != normalizeJSONLines(t, want) {
		t.Errorf("st_db's mounts:\n%s\nwant\n%s", got, want)
	}
	// The volumes the services mount, each once, sorted; unused is not
	// the stack's.
	got, _ := json.Marshal(st.Volumes)
	wantVols := `[{"Name":"corp-media","External":true},` +
		`{"Name":"old","External":true},` +
		`{"Name":"shared-cache"},` +
		`{"Name":"st_db-data","Labels":{"tier":"data"}},` +
		`{"Name":"st_scratch","Options":{"o":"size=64m","type":"tmpfs"}}]`
	if string(got) != wantVols {
		t.Errorf("volumes\n%s\nwant\n%s", got, wantVols)
	}
	// Volumes are filled from the image as Docker's are (copy-up), so
	// nothing is said of mounts without nocopy.
	if len(warned) != 0 {
		t.Errorf("warned %q, want nothing", warned)
	}
}

// normalizeJSONLines re-marshals each line so key order does not matter.
func normalizeJSONLines(t *testing.T, s string) string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(s, "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		b, _ := json.Marshal(v)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// TestVolumeNoCopy: nocopy, in either syntax, is the mount's
// volume_no_copy, and only where it is given.
func TestVolumeNoCopy(t *testing.T) {
	st, err := load(t, "services:\n  web:\n    image: x\n    volumes:\n      - \"dd:/a:nocopy\"\n      - \"dd:/b\"\n"+
		"      - {type: volume, source: dd, target: /c, volume: {nocopy: true}}\n      - {type: volume, source: dd, target: /d, volume: {nocopy: false}}\nvolumes:\n  dd:\n")
	if err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, m := range st.Services[0].Mounts {
		got = append(got, m.VolumeNoCopy)
	}
	if want := []bool{true, false, true, false}; !slices.Equal(got, want) {
		t.Fatalf("volume_no_copy of /a, /b, /c, /d: %v, want %v", got, want)
	}
}

// TestVolumeProfiles: a volume only a service left out by its profiles
// mounts is not the stack's (neither created nor looked for).
func TestVolumeProfiles(t *testing.T) {
	st, err := load(t, "services:\n  web:\n    image: x\n  debug:\n    image: x\n    profiles: [debug]\n    volumes: [\"dd:/d\"]\nvolumes:\n  dd:\n  e: {external: true}\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Volumes) != 0 {
		t.Fatalf("volumes %+v, want none", st.Volumes)
	}
}

// TestVolumeRefused: what jaco's local driver cannot do is refused by
// key, all at once, with the rest of the file's refusals.
func TestVolumeRefused(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"driver", "services:\n  web:\n    image: x\n    volumes: [\"dd:/d\"]\nvolumes:\n  dd: {driver: rexray}\n",
			[]string{"volumes.dd.driver (rexray; jaco volumes are local)"}},
		{"driver of an unused volume", "services:\n  web:\n    image: x\nvolumes:\n  dd: {driver: nfs}\n",
			[]string{"volumes.dd.driver (nfs; jaco volumes are local)"}},
		{"driver option key", "services:\n  web:\n    image: x\n    volumes: [\"dd:/d\"]\nvolumes:\n  dd:\n    driver_opts: {size: 1g}\n",
			[]string{"volumes.dd.driver_opts.size"}},
		{"file system type", "services:\n  web:\n    image: x\n    volumes: [\"dd:/d\"]\nvolumes:\n  dd:\n    driver_opts: {type: nfs, o: addr=10.0.0.1, device: \":/x\"}\n",
			[]string{"volumes.dd.driver_opts.type (nfs; the local driver takes tmpfs, or none with o=bind and device; other file systems come later)"}},
		{"mount volume labels", "services:\n  web:\n    image: x\n    volumes:\n      - type: volume\n        source: dd\n        target: /d\n        volume: {labels: {a: b}}\nvolumes:\n  dd:\n",
			[]string{"services.web.volumes.volume.labels"}},
		{"with others", "services:\n  web:\n    image: x\n    privileged: true\n    volumes: [\"dd:/d\"]\nvolumes:\n  dd: {driver: nfs}\n",
			[]string{"services.web.privileged", "volumes.dd.driver (nfs; jaco volumes are local)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml)
			if reason.Of(err) != reason.UnsupportedComposeKey {
				t.Fatalf("got %v, want unsupported_compose_key", err)
			}
			want := strings.Join(tc.want, ", ") + ": jaco cannot honour"
			if !strings.HasPrefix(reason.Sentence(err), want) {
				t.Fatalf("got %q, want it to start %q", reason.Sentence(err), want)
			}
		})
	}
}

// TestVolumeBadValues: mistakes in a volume's values are plain errors
// naming the key.
func TestVolumeBadValues(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"relative device", "services:\n  web:\n    image: x\n    volumes: [\"dd:/d\"]\nvolumes:\n  dd:\n    driver_opts: {type: none, o: bind, device: srv/x}\n",
			`volumes.dd.driver_opts: volume option device="srv/x": type=none binds a clean absolute path of the node`},
		{"bind without o", "services:\n  web:\n    image: x\n    volumes: [\"dd:/d\"]\nvolumes:\n  dd:\n    driver_opts: {type: none, device: /srv/x}\n",
			`volumes.dd.driver_opts: volume option o="": type=none needs o=bind`},
		{"bad name", "services:\n  web:\n    image: x\n    volumes: [\"dd:/d\"]\nvolumes:\n  dd: {name: Data/Dir}\n",
			`volumes.dd.name: "Data/Dir": use 1-63 lowercase letters`},
		{"external with options", "services:\n  web:\n    image: x\n    volumes: [\"dd:/d\"]\nvolumes:\n  dd:\n    external: true\n    labels: {a: b}\n",
			`volumes.dd: conflicting parameters "external" and "labels"`},
		// Two letters: compose-go reads a:/a as a Windows drive.
		{"two keys, one name", "services:\n  web:\n    image: x\n    volumes: [\"aa:/a\", \"bb:/b\"]\nvolumes:\n  aa: {name: one}\n  bb:\n    name: one\n    driver_opts: {type: tmpfs}\n",
			"volumes.aa and volumes.bb: both name the volume one, differently"},
		{"undefined", "services:\n  web:\n    image: x\n    volumes: [\"nope:/d\"]\n", "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, tc.yaml)
			if err == nil || reason.Of(err) != "" || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a plain error naming %q", err, tc.want)
			}
		})
	}
}

// TestVolumeNamespaced: the same file in two stacks names two volumes.
func TestVolumeNamespaced(t *testing.T) {
	yaml := "services:\n  db:\n    image: x\n    volumes: [\"db-data:/d:nocopy\"]\nvolumes:\n  db-data:\n"
	st, err := load(t, yaml)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Volumes) != 1 || st.Volumes[0].Name != "st_db-data" || st.Services[0].Mounts[0].Source != "st_db-data" {
		t.Fatalf("volumes %+v, mounts %v; want st_db-data", st.Volumes, st.Services[0].Mounts)
	}
	if i := slices.IndexFunc(st.Volumes, func(v Volume) bool { return v.External }); i >= 0 {
		t.Fatalf("volume %+v is external", st.Volumes[i])
	}
}
