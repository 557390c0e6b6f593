package controlapi

import (
	"testing"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
)

// An accepted spec says exactly what each replica gets: defaults are
// filled in where the agent reads them.
func TestFileRefDefaults(t *testing.T) {
	spec := imageSpec("web")
	spec.Secrets = []*api.FileReference{{Name: "db-pass"}, {Name: "tls.key", Target: "key.pem", Mode: 0o440, Uid: 33, Gid: 33}}
	spec.Configs = []*api.FileReference{{Name: "nginx.conf"}, {Name: "app", Target: "/etc/app.yml", Mode: 0o400}}
	if err := validateSpec(spec); err != nil {
		t.Fatal(err)
	}
	want := []*api.FileReference{
		{Name: "db-pass", Target: "db-pass", Mode: 0o444},
		{Name: "tls.key", Target: "key.pem", Mode: 0o440, Uid: 33, Gid: 33},
		{Name: "nginx.conf", Target: "/nginx.conf", Mode: 0o444},
		{Name: "app", Target: "/etc/app.yml", Mode: 0o400},
	}
	got := append(append([]*api.FileReference{}, spec.Secrets...), spec.Configs...)
	for i, r := range got {
		w := want[i]
		if r.Target != w.Target || r.Mode != w.Mode || r.Uid != w.Uid || r.Gid != w.Gid {
			t.Errorf("reference %s filled as target %q mode %#o uid %d gid %d; want %q %#o %d %d",
				r.Name, r.Target, r.Mode, r.Uid, r.Gid, w.Target, w.Mode, w.Uid, w.Gid)
		}
	}
}

func TestFileRefsRefused(t *testing.T) {
	for _, tc := range []struct {
		what             string
		secrets, configs []*api.FileReference
		says             string
	}{
		{"secret target with a slash", []*api.FileReference{{Name: "a", Target: "x/y"}}, nil, "must be a file name"},
		{"secret target ..", []*api.FileReference{{Name: "a", Target: ".."}}, nil, "must be a file name"},
		{"two secrets on one target", []*api.FileReference{{Name: "a", Target: "t"}, {Name: "b", Target: "t"}}, nil, "both target /run/secrets/t"},
		{"the same secret twice by default", []*api.FileReference{{Name: "a"}, {Name: "a"}}, nil, "both target"},
		{"a mode beyond 0777", []*api.FileReference{{Name: "a", Mode: 0o4755}}, nil, "permission bits"},
		{"a bad secret name", []*api.FileReference{{Name: "Bad Name"}}, nil, "secret name"},
		{"relative config target", nil, []*api.FileReference{{Name: "c", Target: "etc/c"}}, "clean absolute"},
		{"unclean config target", nil, []*api.FileReference{{Name: "c", Target: "/etc/../c"}}, "clean absolute"},
		{"config on a secret's path", []*api.FileReference{{Name: "a"}}, []*api.FileReference{{Name: "c", Target: "/run/secrets/a"}}, "both target /run/secrets/a"},
		{"two configs on one target", nil, []*api.FileReference{{Name: "c", Target: "/x"}, {Name: "x"}}, "both target /x"},
		{"a config mode beyond 0777", nil, []*api.FileReference{{Name: "c", Mode: 0o1000}}, "permission bits"},
	} {
		spec := imageSpec("web")
		spec.Secrets, spec.Configs = tc.secrets, tc.configs
		wantRefused(t, tc.what, validateSpec(spec), reason.InvalidSpec, tc.says)
	}
}
