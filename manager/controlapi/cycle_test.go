package controlapi

import (
	"slices"
	"testing"

	"github.com/jaco-project/jaco/api"
)

func TestFindCycle(t *testing.T) {
	spec := func(name string, deps ...string) *api.ServiceSpec {
		return &api.ServiceSpec{Name: name, DependsOn: deps}
	}
	for _, tc := range []struct {
		name  string
		specs []*api.ServiceSpec
		want  []string
	}{
		{"none", []*api.ServiceSpec{spec("web", "db"), spec("db")}, nil},
		{"diamond", []*api.ServiceSpec{spec("a", "b", "c"), spec("b", "d"), spec("c", "d"), spec("d")}, nil},
		{"unknown dependency", []*api.ServiceSpec{spec("web", "db")}, nil},
		{"self", []*api.ServiceSpec{spec("a", "a")}, []string{"a", "a"}},
		{"two", []*api.ServiceSpec{spec("a", "b"), spec("b", "a")}, []string{"a", "b", "a"}},
		{"behind a path", []*api.ServiceSpec{spec("x", "b"), spec("b", "c"), spec("c", "d"), spec("d", "b")}, []string{"b", "c", "d", "b"}},
	} {
		if got := findCycle(tc.specs); !slices.Equal(got, tc.want) {
			t.Errorf("%s: FindCycle = %v, want %v", tc.name, got, tc.want)
		}
	}
}
