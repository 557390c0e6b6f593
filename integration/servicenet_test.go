package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/pkg/namespaces"
	mdns "github.com/miekg/dns"

	ctrd "github.com/jaco-project/jaco/agent/exec/containerd"
)

// idWebCmd serves /www with the replica's id at /id, so a client can tell
// which replica answered.
var idWebCmd = []string{"sh", "-c", "echo $JACO_REPLICA_ID > /www/id && exec httpd -f -p 80 -h /www"}

// TestServicesReachEachOtherByName tests the overlay's data path: web (two
// replicas, on w2 and w3) and a client on w1 share the network front; the
// client finds web by name through its node's DNS and reaches both
// replicas through web's virtual IP over the encrypted overlay; a killed
// replica gets no request 2 s after its death; tasks.web lists exactly the
// running replicas; a replica on another network can neither resolve nor
// reach web; nothing the replicas exchange crosses the underlay in clear;
// a dnsrr service resolves to its replicas; a hook bundle on the network
// is reached by name like a container.
func TestServicesReachEachOtherByName(t *testing.T) {
	t.Parallel()
	c := newContainerCluster(t, 3)
	m := c.manager
	wantOK(t, m.jaco("network", "create", "front"))
	wantOK(t, m.jaco("network", "create", "back"))
	c.createService(t, "web", []string{"--replicas", "2", "--network", "front",
		"--constraint", "node.hostname!=w1", "--constraint", "node.hostname!=m1"}, idWebCmd)
	c.createService(t, "client", []string{"--network", "front", "--constraint", "node.hostname==w1"}, idleCmd)
	c.createService(t, "other", []string{"--network", "back", "--constraint", "node.hostname==w1"}, idleCmd)
	web := c.waitRunning(t, "web", 2, nil)
	if web[0].Node == web[1].Node {
		t.Fatalf("both web replicas on %s; want one on w2 and one on w3: %v", web[0].Node, web)
	}
	client := c.waitRunning(t, "client", 1, nil)[0]
	other := c.waitRunning(t, "other", 1, nil)[0]

	clientNS, err := c.netnsOf("w1", client.ID)
	if err != nil {
		t.Fatal(err)
	}
	conf, err := c.resolvConfOf("w1", client.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(conf, "options ndots:0") {
		t.Errorf("client's resolv.conf %q lacks options ndots:0", conf)
	}
	dnsAddr, err := nameserver(conf)
	if err != nil {
		t.Fatal(err)
	}

	// web resolves to its VIP; tasks.web to the two replicas.
	var vip string
	eventually(t, 10*time.Second, func() error {
		addrs, rcode, err := lookupIn(clientNS, dnsAddr, "web")
		if err != nil || len(addrs) != 1 {
			return fmt.Errorf("web: %v rcode %d: %v", addrs, rcode, err)
		}
		vip = addrs[0]
		return nil
	})
	ids := map[string]string{} // address → replica id, from tasks.web
	eventually(t, 10*time.Second, func() error {
		addrs, _, err := lookupIn(clientNS, dnsAddr, "tasks.web")
		if err != nil || len(addrs) != 2 {
			return fmt.Errorf("tasks.web: %v: %v", addrs, err)
		}
		for _, a := range addrs {
			id, err := getIn(clientNS, a+":80", "/id", 3*time.Second)
			if err != nil {
				return err
			}
			ids[a] = id
		}
		return nil
	})
	if want := []string{web[0].ID, web[1].ID}; !sameSet(values(ids), want) {
		t.Fatalf("tasks.web answers %v, want the replicas %v", ids, want)
	}

	// 200 requests by name: both replicas answer, none fails; the
	// underlay carries none of it in clear.
	capture, err := captureOn(c.byName("w1").host)
	if err != nil {
		t.Fatal(err)
	}
	marker := fmt.Sprintf("/marker-%d", time.Now().UnixNano())
	seen := map[string]int{}
	for i := range 200 {
		addrs, _, err := lookupIn(clientNS, dnsAddr, "web")
		if err != nil || len(addrs) != 1 {
			t.Fatalf("request %d: web resolves to %v: %v", i, addrs, err)
		}
		id, err := getIn(clientNS, addrs[0]+":80", "/id", 5*time.Second)
		if err != nil {
			t.Fatalf("request %d to web (%s): %v", i, addrs[0], err)
		}
		seen[id]++
	}
	_, _ = getIn(clientNS, vip+":80", marker, 5*time.Second) // a 404 whose path is the marker
	saw, frames, wg := capture.finish(strings.TrimPrefix(marker, "/"))
	t.Logf("web is %s; 200 requests by name reached %v; w1's underlay link carried %d frames, %d of them WireGuard", vip, seen, frames, wg)
	if len(seen) != 2 {
		t.Fatalf("200 requests reached %v; want both replicas", seen)
	}
	if saw {
		t.Fatalf("the marker crossed the underlay in clear (%d frames captured)", frames)
	}
	if wg == 0 {
		t.Fatalf("no WireGuard frame on the underlay among %d: the capture saw nothing of the traffic", frames)
	}

	// A replica on another network: web is not its name, nor its address.
	otherNS, err := c.netnsOf("w1", other.ID)
	if err != nil {
		t.Fatal(err)
	}
	otherConf, err := c.resolvConfOf("w1", other.ID)
	if err != nil {
		t.Fatal(err)
	}
	otherDNS, err := nameserver(otherConf)
	if err != nil {
		t.Fatal(err)
	}
	if addrs, rcode, err := lookupIn(otherNS, otherDNS, "web"); err != nil || rcode != mdns.RcodeNameError {
		t.Errorf("web from the back network: %v rcode %d err %v; want NXDOMAIN", addrs, rcode, err)
	}
	for _, a := range append([]string{vip}, keys(ids)...) {
		if _, err := getIn(otherNS, a+":80", "/id", time.Second); err == nil {
			t.Errorf("a replica on back reached %s on front", a)
		}
	}

	// dnsrr: db has no VIP, its name answers with its replicas. A hook
	// bundle on front (in a namespace of its own on w2) is found and
	// reached by name like a container.
	c.createService(t, "db", []string{"--replicas", "2", "--network", "front", "--endpoint-mode", "dnsrr",
		"--constraint", "node.hostname!=m1"}, idWebCmd)
	hookOut := t.TempDir()
	bundle := writeBundle(t, hookOut, `www="$OUT/www.$JACO_REPLICA_ID"; mkdir -p "$www" && echo $JACO_REPLICA_ID > "$www/id" && exec busybox httpd -f -p 80 -h "$www"`)
	wantOK(t, m.jaco(append(append([]string{"service", "create", "-d", "--name", "hk", "--network", "front",
		"--constraint", "node.hostname==w2", "-e", "OUT=" + hookOut}, quickStop...), "--bundle", bundle)...))
	db := c.waitRunning(t, "db", 2, nil)
	hk := c.waitRunning(t, "hk", 1, nil)[0]
	eventually(t, 10*time.Second, func() error {
		addrs, _, err := lookupIn(clientNS, dnsAddr, "db")
		if err != nil || len(addrs) != 2 {
			return fmt.Errorf("db (dnsrr): %v: %v; want its two replicas", addrs, err)
		}
		var got []string
		for _, a := range addrs {
			id, err := getIn(clientNS, a+":80", "/id", 3*time.Second)
			if err != nil {
				return err
			}
			got = append(got, id)
		}
		if !sameSet(got, []string{db[0].ID, db[1].ID}) {
			return fmt.Errorf("db answers from %v, want %v", got, db)
		}
		return nil
	})
	eventually(t, 10*time.Second, func() error {
		addrs, _, err := lookupIn(clientNS, dnsAddr, "hk.front")
		if err != nil || len(addrs) != 1 {
			return fmt.Errorf("hk.front: %v: %v", addrs, err)
		}
		id, err := getIn(clientNS, addrs[0]+":80", "/id", 3*time.Second)
		if err != nil || id != hk.ID {
			return fmt.Errorf("hk through its VIP %s: %q, %v; want %s", addrs[0], id, err, hk.ID)
		}
		return nil
	})

	// Kill one web replica: 2 s later no request goes to it, and none
	// fails.
	victim := web[0]
	killReplica(t, c, victim.Node, victim.ID)
	killed := time.Now()
	var lastSeen time.Duration // since the kill, the last answer of the victim
	for time.Since(killed) < 6*time.Second {
		id, err := getIn(clientNS, vip+":80", "/id", 3*time.Second)
		late := time.Since(killed) > 2*time.Second
		if err == nil && id == victim.ID {
			lastSeen = time.Since(killed)
		}
		switch {
		case late && err != nil:
			t.Fatalf("%v after the kill: request failed: %v", time.Since(killed).Round(time.Millisecond), err)
		case late && id == victim.ID:
			t.Fatalf("%v after the kill: the killed replica answered", time.Since(killed).Round(time.Millisecond))
		}
	}
	t.Logf("the killed replica answered last %v after its death", lastSeen.Round(time.Millisecond))
	eventually(t, replicaTimeout, func() error {
		reps, err := c.ps("web", false)
		if err != nil {
			return err
		}
		var want []string
		for _, r := range reps {
			if r.State == "running" {
				want = append(want, r.ID)
			}
		}
		addrs, _, err := lookupIn(clientNS, dnsAddr, "tasks.web")
		if err != nil {
			return err
		}
		var got []string
		for _, a := range addrs {
			id, err := getIn(clientNS, a+":80", "/id", 3*time.Second)
			if err != nil {
				return err
			}
			got = append(got, id)
		}
		if len(want) != 2 || !sameSet(got, want) || slices.Contains(got, victim.ID) {
			return fmt.Errorf("tasks.web answers replicas %v, running are %v", got, want)
		}
		return nil
	})
}

// killReplica SIGKILLs replica id's container on node name, as a crash
// would end it.
func killReplica(t testing.TB, c *ccluster, name, id string) {
	t.Helper()
	if err := c.kill(name, id); err != nil {
		t.Fatal(err)
	}
}

func (c *ccluster) kill(name, id string) error {
	names, err := ctrd.NamesFor(c.nodeIDs[name], "")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(namespaces.WithNamespace(context.Background(), names.Namespace), 10*time.Second)
	defer cancel()
	ct, err := c.client.LoadContainer(ctx, id)
	if err != nil {
		return fmt.Errorf("container %s on %s: %w", id, name, err)
	}
	task, err := ct.Task(ctx, nil)
	if err != nil {
		return fmt.Errorf("task of %s on %s: %w", id, name, err)
	}
	if err := task.Kill(ctx, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill %s on %s: %w", id, name, err)
	}
	return nil
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
