package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func checked(t *testing.T, keys map[string][]string, filters ...string) *listFlags {
	t.Helper()
	lf := &listFlags{format: "table", keys: keys, filters: filters}
	if err := lf.check(); err != nil {
		t.Fatalf("--filter %v: %v", filters, err)
	}
	return lf
}

var serviceKeys = map[string][]string{"id": nil, "name": nil, "mode": {"replicated", "global"}}

func TestFilterServices(t *testing.T) {
	views := []serviceView{{ID: "a1", Name: "web", Mode: "replicated"}, {ID: "b2", Name: "web-admin", Mode: "global"}, {ID: "c3", Name: "db", Mode: "replicated"}}
	for _, c := range []struct {
		filters []string
		want    string
	}{
		{nil, "web web-admin db"},
		{[]string{"name=web"}, "web web-admin"},
		{[]string{"name=web", "mode=replicated"}, "web"},
		{[]string{"name=db", "name=web-"}, "web-admin db"},
		{[]string{"id=c"}, "db"},
		{[]string{"mode=global"}, "web-admin"},
	} {
		var names []string
		for _, v := range filterServices(views, checked(t, serviceKeys, c.filters...)) {
			names = append(names, v.Name)
		}
		if got := strings.Join(names, " "); got != c.want {
			t.Errorf("--filter %v kept %q, want %q", c.filters, got, c.want)
		}
	}
}

func TestFilterReplicas(t *testing.T) {
	keys := map[string][]string{"node": nil, "name": nil, "desired-state": {"running", "shutdown", "complete"}}
	views := []taskView{
		{ID: "t1", Name: "web.1", Node: "n-a", nodeID: "id-a", Desired: "running"},
		{ID: "t2", Name: "web.1", Node: "n-b", nodeID: "id-b", Desired: "shutdown"},
		{ID: "t3", Name: "web.10", Node: "n-b", nodeID: "id-b", Desired: "running"},
	}
	for _, c := range []struct {
		filters []string
		want    string
	}{
		{[]string{"name=web.1"}, "t1 t2"},
		{[]string{"node=n-b"}, "t2 t3"},
		{[]string{"node=id-a"}, "t1"},
		{[]string{"desired-state=running", "node=n-b"}, "t3"},
	} {
		var ids []string
		for _, v := range filterReplicas(views, checked(t, keys, c.filters...)) {
			ids = append(ids, v.ID)
		}
		if got := strings.Join(ids, " "); got != c.want {
			t.Errorf("--filter %v kept %q, want %q", c.filters, got, c.want)
		}
	}
}

func TestFilterNodes(t *testing.T) {
	keys := map[string][]string{"id": nil, "name": nil, "label": nil, "role": {"manager", "worker"}, "availability": {"active", "pause", "drain"}}
	nodes := []nodeView{
		{ID: "n1", Hostname: "m1", Role: "manager", Availability: "active", Labels: map[string]string{"zone": "a"}},
		{ID: "n2", Hostname: "w1", Role: "worker", Availability: "drain", Labels: map[string]string{"zone": "b", "ssd": ""}},
		{ID: "n3", Hostname: "w2", Role: "worker", Availability: "active", Labels: map[string]string{}},
	}
	for _, c := range []struct {
		filters []string
		want    string
	}{
		{[]string{"role=worker"}, "w1 w2"},
		{[]string{"label=zone"}, "m1 w1"},
		{[]string{"label=zone=b"}, "w1"},
		{[]string{"label=ssd"}, "w1"},
		{[]string{"availability=active", "name=w"}, "w2"},
	} {
		lf := checked(t, keys, c.filters...)
		var names []string
		for _, n := range nodes {
			if n.passes(lf) {
				names = append(names, n.Hostname)
			}
		}
		if got := strings.Join(names, " "); got != c.want {
			t.Errorf("--filter %v kept %q, want %q", c.filters, got, c.want)
		}
	}
}

// An unknown key, a value the key does not take, or no KEY=VALUE is a
// usage mistake: exit 2 before any daemon is asked.
func TestBadFilterExitsTwo(t *testing.T) {
	for _, args := range [][]string{
		{"service", "ls", "--filter", "label=x"},
		{"service", "ls", "--filter", "mode=both"},
		{"service", "ps", "web", "--filter", "desired-state=paused"},
		{"service", "ps", "web", "-f", "role=worker"},
		{"node", "ls", "--filter", "name"},
		{"node", "ls", "--filter", "role=leader"},
	} {
		var stdout, stderr bytes.Buffer
		args = append([]string{"--data-dir", t.TempDir()}, args...)
		if code := run(args, nil, &stdout, &stderr); code != 2 || !strings.HasPrefix(stderr.String(), "error: usage: --filter") {
			t.Errorf("jaco %s: exit %d, stderr %q; want 2 and a usage error naming --filter", strings.Join(args, " "), code, stderr.String())
		}
	}
}

// -q prints the ids and nothing else, one per line.
func TestQuietPrintsIDs(t *testing.T) {
	cmd := &cobra.Command{}
	var out bytes.Buffer
	cmd.SetOut(&out)
	if err := writeIDs(cmd, []string{"a1", "b2"}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "a1\nb2\n" {
		t.Fatalf("-q printed %q", got)
	}
	for _, args := range [][]string{{"service", "ls"}, {"service", "ps", "web"}, {"node", "ls"}} {
		root := &cobra.Command{Use: "jaco"}
		root.AddCommand(serviceCmd(&globals{}), nodeCmd(&globals{}))
		c, _, err := root.Find(args)
		if err != nil || c.Flags().ShorthandLookup("q") == nil || c.Flags().Lookup("quiet") == nil {
			t.Errorf("jaco %s has no -q/--quiet (%v)", strings.Join(args, " "), err)
		}
	}
}
