package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	units "github.com/docker/go-units"

	"github.com/jaco-project/jaco/api"
)

// The flag values below check what they are given as the flag is parsed,
// so a bad value is a usage error (exit 2) on update too, where the spec
// is only changed after the service has been read from the daemon.

// maxSize bounds a size flag far beyond any machine's memory, so a value
// such as 1e30 is refused instead of overflowing int64.
const maxSize = 1 << 60

// sizeValue is a size as Docker reads it: 512, 64m, 64MB, 1.5G, 1GiB
// (powers of 1024).
type sizeValue struct {
	text  string
	bytes int64
}

func (v *sizeValue) String() string { return v.text }
func (v *sizeValue) Type() string   { return "size" }

func (v *sizeValue) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	v.text, v.bytes = s, n
	return nil
}

// parseBytes reads a size the way docker's --memory does.
func parseBytes(s string) (int64, error) {
	n, err := units.RAMInBytes(strings.TrimSpace(s))
	if err != nil || n < 0 || n > maxSize {
		return 0, fmt.Errorf("size %q: want a number with an optional unit such as 512, 64m, 64MB or 1.5G", s)
	}
	return n, nil
}

// durationValue is a duration from 0 to max.
type durationValue struct {
	d   time.Duration
	max time.Duration
}

func (v *durationValue) String() string { return v.d.String() }
func (v *durationValue) Type() string   { return "duration" }

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 10s or 1m30s")
	}
	if d < 0 || d > v.max {
		return fmt.Errorf("want 0s to %v", v.max)
	}
	v.d = d
	return nil
}

// ratioValue is a fraction from 0 to 1.
type ratioValue float64

func (v *ratioValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }
func (v *ratioValue) Type() string   { return "ratio" }

func (v *ratioValue) Set(s string) error {
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
		return fmt.Errorf("want a fraction from 0 to 1, such as 0.2")
	}
	*v = ratioValue(r)
	return nil
}

// choiceValue is one word of a fixed set.
type choiceValue struct {
	word    string
	choices []string
}

func (v *choiceValue) String() string { return v.word }
func (v *choiceValue) Type() string   { return "string" }

func (v *choiceValue) Set(s string) error {
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("want %s", strings.Join(v.choices, " or "))
	}
	v.word = s
	return nil
}

// mountHelp is --mount's help: Docker's keys, and jaco's one more.
const mountHelp = "mount SOURCE:TARGET[:ro] (bind), or Docker's comma-separated keys (repeatable):\n" +
	"type=bind,source=/node/path,target=/path[,readonly][,bind-create-host-path] (bind-create-host-path:\n" +
	"make a missing source directory, as compose's bind.create_host_path; without it a missing source fails the replica),\n" +
	"or type=tmpfs,target=/path[,tmpfs-size=64m][,tmpfs-mode=1777] (in memory, the replica's own; mode in octal),\n" +
	"or type=volume,source=NAME,target=/path[,readonly][,volume-opt=K=V]...[,volume-nocopy] (a named volume, made on first use;\n" +
	"it lives on one node and every replica mounting it runs there; NAME may be per slot, pg-{{.Task.Slot}}: one volume\n" +
	"for each slot, on the node its first replica ran on), or type=volume,target=/path (anonymous:\n" +
	"the replica's own directory, gone with it); an empty volume starts with what the image holds at target,\n" +
	"as Docker's, unless volume-nocopy"

// mountsValue collects --mount flags, each SOURCE:TARGET[:ro] or Docker's
// type=bind,source=SRC,target=DST[,readonly] or
// type=tmpfs,target=DST[,tmpfs-size=SIZE,tmpfs-mode=OCTAL].
type mountsValue struct{ mounts []*api.Mount }

func (v *mountsValue) Type() string { return "mount" }

func (v *mountsValue) String() string {
	var parts []string
	for _, m := range v.mounts {
		s := m.Source + ":" + m.Target
		if m.Type == api.MountType_MOUNT_TYPE_TMPFS {
			s = "tmpfs:" + m.Target
		}
		if api.IsVolumeMount(m) {
			s = "volume:" + s
		}
		if m.Readonly {
			s += ":ro"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ") // "" when none: no "(default)" in the help
}

func (v *mountsValue) Set(s string) error {
	m, err := parseMount(s)
	if err != nil {
		return err
	}
	v.mounts = append(v.mounts, m)
	return nil
}

// maxTmpfsMode is the most a tmpfs root's mode holds: permission bits with
// setuid, setgid and sticky.
const maxTmpfsMode = 0o7777

// parseMount reads one --mount. A bind mount's type is left unspecified
// (the proto's bind), as every bind mount was before tmpfs existed, so a
// spec written by an older jaco compares equal to one written now.
func parseMount(s string) (*api.Mount, error) {
	if !strings.ContainsAny(s, ",=") {
		parts := strings.Split(s, ":")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" || (len(parts) == 3 && parts[2] != "ro") {
			return nil, fmt.Errorf("%q: want SOURCE:TARGET[:ro] or type=bind,source=SOURCE,target=TARGET[,readonly]", s)
		}
		return &api.Mount{Source: parts[0], Target: parts[1], Readonly: len(parts) == 3}, nil
	}
	m := &api.Mount{}
	typ := "bind"
	given := map[string]bool{}
	for _, field := range strings.Split(s, ",") {
		key, val, hasVal := strings.Cut(field, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		given[key] = true
		switch key {
		case "type":
			if val != "bind" && val != "tmpfs" && val != "volume" {
				return nil, fmt.Errorf("%q: type %q: want bind, tmpfs or volume", s, val)
			}
			typ = val
		case "source", "src":
			m.Source = val
		case "target", "dst", "destination":
			m.Target = val
		case "readonly", "ro", "bind-create-host-path", "volume-nocopy":
			on := true
			if hasVal {
				b, err := strconv.ParseBool(val)
				if err != nil {
					return nil, fmt.Errorf("%q: %s=%q: want true or false", s, key, val)
				}
				on = b
			}
			switch key {
			case "bind-create-host-path":
				m.CreateHostPath = on
			case "volume-nocopy":
				m.VolumeNoCopy = on
			default:
				m.Readonly = on
			}
		case "volume-opt":
			k, v, ok := strings.Cut(val, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("%q: volume-opt %q: want volume-opt=KEY=VALUE", s, val)
			}
			if m.VolumeOptions == nil {
				m.VolumeOptions = map[string]string{}
			}
			m.VolumeOptions[k] = v
		case "tmpfs-size":
			n, err := parseBytes(val)
			if err != nil {
				return nil, fmt.Errorf("%q: tmpfs-size: %w", s, err)
			}
			m.TmpfsSizeBytes = n
		case "tmpfs-mode":
			mode, err := strconv.ParseUint(val, 8, 32)
			if err != nil || mode > maxTmpfsMode {
				return nil, fmt.Errorf("%q: tmpfs-mode %q: want octal permission bits, 0 to 7777 (such as 1777)", s, val)
			}
			m.TmpfsMode = uint32(mode)
		default:
			return nil, fmt.Errorf("%q: unknown key %q (want type, source, target, readonly, tmpfs-size, tmpfs-mode, bind-create-host-path, volume-opt, volume-nocopy)", s, key)
		}
	}
	switch typ {
	case "tmpfs":
		m.Type = api.MountType_MOUNT_TYPE_TMPFS
		if m.Source != "" {
			return nil, fmt.Errorf("%q: a tmpfs mount has no source", s)
		}
		if given["bind-create-host-path"] {
			return nil, fmt.Errorf("%q: bind-create-host-path is a bind mount's", s)
		}
		if given["volume-nocopy"] {
			return nil, fmt.Errorf("%q: volume-nocopy is a volume mount's (type=volume)", s)
		}
		if m.Target == "" {
			return nil, fmt.Errorf("%q: a tmpfs mount needs target=", s)
		}
	case "volume":
		// An empty source is an anonymous volume (docs/adr/0061-volumes.md).
		m.Type = api.MountType_MOUNT_TYPE_VOLUME
		for _, k := range []string{"tmpfs-size", "tmpfs-mode", "bind-create-host-path"} {
			if given[k] {
				return nil, fmt.Errorf("%q: %s is not a volume mount's", s, k)
			}
		}
		if m.Target == "" {
			return nil, fmt.Errorf("%q: a volume mount needs target=", s)
		}
	default:
		for _, k := range []string{"tmpfs-size", "tmpfs-mode"} {
			if given[k] {
				return nil, fmt.Errorf("%q: %s is a tmpfs mount's (type=tmpfs)", s, k)
			}
		}
		for _, k := range []string{"volume-opt", "volume-nocopy"} {
			if given[k] {
				return nil, fmt.Errorf("%q: %s is a volume mount's (type=volume)", s, k)
			}
		}
		if m.Source == "" || m.Target == "" {
			return nil, fmt.Errorf("%q: a bind mount needs source= and target=", s)
		}
	}
	return m, nil
}

// checkedString is a string flag whose value check accepts.
type checkedString struct {
	p     *string
	check func(string) error
}

func (v *checkedString) Type() string { return "string" }

func (v *checkedString) String() string {
	if v.p == nil { // pflag renders a zero value to find out what is a default
		return ""
	}
	return *v.p
}

func (v *checkedString) Set(s string) error {
	if err := v.check(s); err != nil {
		return err
	}
	*v.p = s
	return nil
}

// checkedList is a repeatable string flag, each value one check accepts.
type checkedList struct {
	p     *[]string
	check func(string) error
}

func (v *checkedList) Type() string { return "stringArray" }

func (v *checkedList) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, " ")
}

func (v *checkedList) Set(s string) error {
	if err := v.check(s); err != nil {
		return err
	}
	*v.p = append(*v.p, s)
	return nil
}

// oneOf accepts the words given.
func oneOf(words ...string) func(string) error {
	return func(s string) error {
		if !slices.Contains(words, s) {
			return fmt.Errorf("want %s", strings.Join(words, ", "))
		}
		return nil
	}
}
