package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jaco-project/jaco/api"
)

// parseFileRef reads --secret and --config: NAME or source=NAME, then
// target=, mode= (octal), uid=, gid=, comma-separated. What is not given
// the manager fills in (secret: target NAME; config: target /NAME; mode
// 0444 for both, Docker's default; uid and gid 0) and checks (targets).
func parseFileRef(s string) (*api.FileReference, error) {
	r := &api.FileReference{}
	seen := map[string]bool{}
	for i, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			if i != 0 {
				return nil, fmt.Errorf("%q is not KEY=VALUE; want NAME[,target=T,mode=0444,uid=0,gid=0]", part)
			}
			k, v = "source", part
		}
		if k == "src" {
			k = "source"
		}
		if seen[k] {
			return nil, fmt.Errorf("%s is given twice", k)
		}
		seen[k] = true
		switch k {
		case "source":
			r.Name = v
		case "target":
			if v == "" {
				return nil, fmt.Errorf("target is empty")
			}
			r.Target = v
		case "mode":
			m, err := strconv.ParseUint(v, 8, 32)
			if err != nil || m == 0 || m > 0o777 {
				return nil, fmt.Errorf("mode %q: want octal permission bits, 1 to 0777 (such as 0440)", v)
			}
			r.Mode = uint32(m)
		case "uid", "gid":
			n, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("%s %q: want a number", k, v)
			}
			if k == "uid" {
				r.Uid = uint32(n)
			} else {
				r.Gid = uint32(n)
			}
		default:
			return nil, fmt.Errorf("unknown key %q: want source, target, mode, uid or gid", k)
		}
	}
	if r.Name == "" {
		return nil, fmt.Errorf("no name; want NAME[,target=T,mode=0444,uid=0,gid=0]")
	}
	return r, nil
}

func checkFileRef(s string) error { _, err := parseFileRef(s); return err }

// parseFileRefs reads every flag value; they were checked as parsed.
func parseFileRefs(flag string, values []string) ([]*api.FileReference, error) {
	var refs []*api.FileReference
	for _, v := range values {
		r, err := parseFileRef(v)
		if err != nil {
			return nil, fmt.Errorf("--%s %q: %w", flag, v, err)
		}
		refs = append(refs, r)
	}
	return refs, nil
}

// editFileRefs applies --X-rm (by name) then --X-add: an added reference
// replaces the one at the same target (a reference without a target is at
// its default one), so adding a file again with other options changes it.
func editFileRefs(refs []*api.FileReference, rm, add []string, flag string, defaultTarget func(name string) string) ([]*api.FileReference, error) {
	refs = slices.DeleteFunc(refs, func(r *api.FileReference) bool { return slices.Contains(rm, r.GetName()) })
	adds, err := parseFileRefs(flag, add)
	if err != nil {
		return nil, err
	}
	target := func(r *api.FileReference) string {
		if r.GetTarget() != "" {
			return r.GetTarget()
		}
		return defaultTarget(r.GetName())
	}
	for _, a := range adds {
		refs = slices.DeleteFunc(refs, func(r *api.FileReference) bool { return target(r) == target(a) })
		refs = append(refs, a)
	}
	return refs, nil
}

func secretTarget(name string) string { return name }
func configTarget(name string) string { return "/" + name }
