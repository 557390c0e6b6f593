package main

import (
	"fmt"
	"maps"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/procopts"
)

// procFlags are the process and container options of `service create`
// and `service update`, under docker service create's names
// (docs/adr/0059-process-and-container-options.md). Every value is read
// as the flag is parsed, with api/procopts where the manager reads the
// same word, so a bad one is a usage error before any request; the
// manager checks again. On update a flag not given leaves its field
// alone, and a list flag given replaces the service's list, as --network
// and --secret do.
type procFlags struct {
	user, workdir, hostname, stopSignal string
	groups, capAdd, capDrop             []string
	ulimits                             ulimitsValue
	sysctls                             sysctlsValue
	init, readOnly                      bool
	hosts, dns, dnsSearch, dnsOptions   []string
	shmSize                             sizeValue
}

func (f *procFlags) register(fs *pflag.FlagSet) {
	fs.VarP(&checkedString{&f.user, checkUser}, "user", "u", "USER[:GROUP] the command runs as, names or numeric ids")
	fs.Var(&checkedList{&f.groups, checkGroup}, "group", "supplementary group of the user, name or id (repeatable; on update the list replaces the service's)")
	fs.VarP(&checkedString{&f.workdir, checkWorkdir}, "workdir", "w", "absolute directory the command starts in")
	fs.Var(&checkedString{&f.hostname, checkHostname}, "hostname", "the replicas' host name (templates allowed; default: the container id's first 12 characters)")
	fs.Var(&checkedList{&f.capAdd, checkCapability}, "cap-add", "Linux capability to add, such as NET_ADMIN, or ALL (repeatable; on update the list replaces the service's)")
	fs.Var(&checkedList{&f.capDrop, checkCapability}, "cap-drop", "Linux capability to drop, such as NET_RAW, or ALL (repeatable; on update the list replaces the service's)")
	fs.Var(&f.sysctls, "sysctl", "namespaced kernel parameter KEY=VALUE: net.*, fs.mqueue.*, IPC kernel.* (repeatable; on update the set replaces the service's)")
	fs.Var(&f.ulimits, "ulimit", "resource limit NAME=SOFT[:HARD] such as nofile=1024:2048 (HARD defaults to SOFT, -1 is unlimited;\n"+
		"repeatable; on update the list replaces the service's)")
	fs.Var(&checkedString{&f.stopSignal, checkSignal}, "stop-signal", "first signal of the stop ladder instead of SIGINT, such as SIGTERM (default: the image's STOPSIGNAL, else SIGINT)")
	fs.BoolVar(&f.init, "init", false, "run a minimal init as PID 1 that forwards signals and reaps zombies")
	fs.BoolVar(&f.readOnly, "read-only", false, "mount the replicas' root file system read-only")
	fs.Var(&checkedList{&f.hosts, checkExtraHost}, "host", "HOST:IP line added to /etc/hosts (repeatable; on update the list replaces the service's)")
	fs.Var(&checkedList{&f.dns, atMost(&f.dns, maxNameservers, "nameservers", checkNameserver)}, "dns",
		"nameserver IP address instead of the node's resolver (repeatable, at most 3; on update the list replaces the service's)")
	fs.Var(&checkedList{&f.dnsSearch, atMost(&f.dnsSearch, maxSearchDomains, "search domains", checkDNSWord)}, "dns-search",
		"DNS search domain (repeatable, at most 6; on update the list replaces the service's)")
	fs.Var(&checkedList{&f.dnsOptions, checkDNSWord}, "dns-option", "resolver option such as ndots:2 (repeatable; on update the list replaces the service's)")
	fs.Var(&f.shmSize, "shm-size", "size of /dev/shm, such as 64m (default 64 MiB; 0 restores the default)")
}

// apply writes the flags set says were given into spec.
func (f *procFlags) apply(set func(string) bool, spec *api.ServiceSpec) {
	assign(set, "user", &spec.User, f.user)
	assign(set, "group", &spec.Groups, f.groups)
	assign(set, "workdir", &spec.Workdir, f.workdir)
	assign(set, "hostname", &spec.Hostname, f.hostname)
	assign(set, "cap-add", &spec.CapAdd, capabilities(f.capAdd))
	assign(set, "cap-drop", &spec.CapDrop, capabilities(f.capDrop))
	assign(set, "sysctl", &spec.Sysctls, f.sysctls.m)
	assign(set, "ulimit", &spec.Ulimits, f.ulimits.list)
	assign(set, "stop-signal", &spec.StopSignal, f.stopSignal)
	assign(set, "init", &spec.Init, f.init)
	assign(set, "read-only", &spec.ReadOnly, f.readOnly)
	assign(set, "host", &spec.ExtraHosts, f.hosts)
	assign(set, "dns", &spec.Dns, f.dns)
	assign(set, "dns-search", &spec.DnsSearch, f.dnsSearch)
	assign(set, "dns-option", &spec.DnsOptions, f.dnsOptions)
	assign(set, "shm-size", &spec.ShmSizeBytes, f.shmSize.bytes)
}

// assign writes v into *field when the flag was given; a flag not given
// leaves the field alone.
func assign[T any](set func(string) bool, flag string, field *T, v T) {
	if set(flag) {
		*field = v
	}
}

// capabilities spells each (checked) capability as procopts does,
// "CAP_NET_ADMIN" or "ALL", so a spec reads the same whichever spelling
// the operator typed.
func capabilities(names []string) []string {
	var out []string
	for _, n := range names {
		c, err := procopts.Capability(n)
		if err != nil { // checked as parsed
			c = n
		}
		out = append(out, c)
	}
	return out
}

// userOrGroup is a user or group name or numeric id, as the manager
// accepts it (manager/controlapi reads the same pattern).
var userOrGroup = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}\$?$`)

// checkUser reads USER[:GROUP]; "" clears it on update.
func checkUser(s string) error {
	if s == "" {
		return nil
	}
	user, group, hasGroup := strings.Cut(s, ":")
	if !userOrGroup.MatchString(user) || (hasGroup && !userOrGroup.MatchString(group)) {
		return fmt.Errorf("want USER or USER:GROUP, names or numeric ids such as 1000:1000 or www-data")
	}
	return nil
}

func checkGroup(s string) error {
	if !userOrGroup.MatchString(s) {
		return fmt.Errorf("want a group name or numeric id")
	}
	return nil
}

// checkWorkdir wants a clean absolute path; "" clears it on update.
func checkWorkdir(s string) error {
	if s != "" && (!path.IsAbs(s) || path.Clean(s) != s) {
		return fmt.Errorf("want a clean absolute path such as /app")
	}
	return nil
}

// hostName is a host name: dot-separated labels of letters, digits and
// '-', at most 64 bytes (the kernel's HOST_NAME_MAX).
var hostName = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*$`)

// checkHostname accepts a host name or a template (expanded by the
// agent, so only the manager's check applies); "" clears it on update.
func checkHostname(s string) error {
	if s == "" || strings.Contains(s, "{{") {
		return nil
	}
	if len(s) > 64 || !hostName.MatchString(s) {
		return fmt.Errorf("want letters, digits, '-' and '.', at most 64 characters")
	}
	return nil
}

func checkCapability(s string) error { _, err := procopts.Capability(s); return err }

// checkSignal reads a signal as the runtimes will; "" clears it on update.
func checkSignal(s string) error {
	if s == "" {
		return nil
	}
	_, err := procopts.Signal(s)
	return err
}

func checkExtraHost(s string) error { _, _, err := procopts.ExtraHost(s); return err }

func checkNameserver(s string) error {
	if _, err := netip.ParseAddr(s); err != nil {
		return fmt.Errorf("want a nameserver's IP address such as 10.0.0.2")
	}
	return nil
}

// The resolver reads no more nameservers and search domains than these;
// the manager refuses more (docs/adr/0059-process-and-container-options.md).
const (
	maxNameservers   = 3
	maxSearchDomains = 6
)

// atMost refuses a value beyond the max-th of the list, then checks it.
func atMost(list *[]string, max int, what string, check func(string) error) func(string) error {
	return func(s string) error {
		if len(*list) >= max {
			return fmt.Errorf("at most %d %s: the resolver reads no more", max, what)
		}
		return check(s)
	}
}

// dnsWord is a search domain or a resolver option, as the manager takes it.
var dnsWord = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,253}$`)

func checkDNSWord(s string) error {
	if !dnsWord.MatchString(s) {
		return fmt.Errorf("want one word of letters, digits, '.', '_', ':' or '-'")
	}
	return nil
}

// ulimitsValue collects --ulimit flags, NAME=SOFT[:HARD].
type ulimitsValue struct{ list []*api.Ulimit }

func (v *ulimitsValue) Type() string { return "ulimit" }

func (v *ulimitsValue) String() string {
	var parts []string
	for _, u := range v.list {
		parts = append(parts, fmt.Sprintf("%s=%d:%d", u.Name, u.Soft, u.Hard))
	}
	return strings.Join(parts, " ")
}

// Set refuses a name given twice here, where it is still a usage error
// (the manager would refuse the spec).
func (v *ulimitsValue) Set(s string) error {
	u, err := parseUlimit(s)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(v.list, func(o *api.Ulimit) bool { return o.Name == u.Name }) {
		return fmt.Errorf("ulimit %s is given twice", u.Name)
	}
	v.list = append(v.list, u)
	return nil
}

// parseUlimit reads NAME=SOFT[:HARD] as docker's --ulimit does: HARD
// defaults to SOFT, -1 is unlimited.
func parseUlimit(s string) (*api.Ulimit, error) {
	name, limits, ok := strings.Cut(s, "=")
	if !ok {
		return nil, fmt.Errorf("%q: want NAME=SOFT[:HARD] such as nofile=1024:2048", s)
	}
	softText, hardText, hasHard := strings.Cut(limits, ":")
	if !hasHard {
		hardText = softText
	}
	soft, err1 := strconv.ParseInt(softText, 10, 64)
	hard, err2 := strconv.ParseInt(hardText, 10, 64)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%q: want NAME=SOFT[:HARD] with whole numbers (-1: unlimited)", s)
	}
	u := &api.Ulimit{Name: name, Soft: soft, Hard: hard}
	if err := procopts.CheckUlimit(u); err != nil {
		return nil, err
	}
	return u, nil
}

// sysctlsValue collects --sysctl flags, KEY=VALUE.
type sysctlsValue struct{ m map[string]string }

func (v *sysctlsValue) Type() string { return "sysctl" }

func (v *sysctlsValue) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(v.m)) {
		parts = append(parts, k+"="+v.m[k])
	}
	return strings.Join(parts, " ")
}

func (v *sysctlsValue) Set(s string) error {
	k, val, err := parseSysctl(s)
	if err != nil {
		return err
	}
	if _, dup := v.m[k]; dup {
		return fmt.Errorf("sysctl %s is given twice", k)
	}
	if v.m == nil {
		v.m = map[string]string{}
	}
	v.m[k] = val
	return nil
}

// parseSysctl reads KEY=VALUE, a kernel parameter of the replica's own
// namespaces only (procopts.CheckSysctl).
func parseSysctl(s string) (string, string, error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok || v == "" {
		return "", "", fmt.Errorf("%q: want KEY=VALUE such as net.core.somaxconn=1024", s)
	}
	if err := procopts.CheckSysctl(k); err != nil {
		return "", "", err
	}
	return k, v, nil
}
