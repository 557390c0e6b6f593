package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// badInput is a row of the CLI's bad-input table: a call jaco must
// refuse, its exit status (2: usage, 1: refused) and what stderr must hold.
type badInput struct {
	args []string
	code int
	want string
}

// usage is a row refused as a usage error whose message holds want.
func usage(want string, args ...string) badInput {
	return badInput{args: args, code: 2, want: want}
}

// TestBadInput runs the rows of the table that need no daemon: jaco is
// pointed at an empty data dir, so a row refused with 2 was refused before
// anything was dialled (a call that got as far as dialling fails
// unavailable, 1). Rows that need a daemon (a mode change refused
// invalid_spec, a token of another cluster refused ca_mismatch) are in
// integration/badinput_test.go and integration/tcp_test.go.
func TestBadInput(t *testing.T) {
	t.Setenv("JACO_SERVER", "")
	t.Setenv("JACO_TOKEN", "")
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bundleDir := t.TempDir()
	create := func(args ...string) []string {
		return append([]string{"service", "create", "--name", "web"}, append(args, "busybox")...)
	}
	rows := []badInput{
		// Commands, flags and arguments.
		usage(`unknown command "lss" for "jaco service"`, "service", "lss"),
		usage(`unknown command "frob" for "jaco node"`, "node", "frob"),
		usage(`unknown command "frob" for "jaco"`, "frob"),
		usage("unknown flag: --bogus", "--bogus"),
		usage("unknown flag: --bogus", "service", "ls", "--bogus"),
		usage("accepts 1 arg(s), received 0", "service", "inspect"),
		usage("accepts 1 arg(s), received 2", "service", "ps", "a", "b"),
		usage("requires at least 1 arg(s)", "service", "rm"),
		usage(`required flag(s) "name" not set`, "service", "create", "busybox"),
		usage("give an IMAGE or --bundle DIR", "service", "create", "--name", "web"),
		usage("--image cannot be combined with a rollback", "service", "update", "web", "--rollback", "--image", "x"),
		usage("--env replaces the whole list and --env-add edits it: give one", "service", "update", "web", "-e", "A=1", "--env-add", "B=2"),
		usage("--env-rm cannot be combined with a rollback", "service", "update", "web", "--rollback", "--env-rm", "A"),
		usage(`"--publish-rm" flag: want PUBLISHED[/udp]`, "service", "update", "web", "--publish-rm", "80/sctp"),
		// Global flags.
		usage(`time: missing unit in duration "5"`, "--timeout", "5", "service", "ls"),
		usage(`--consistency "eventual"`, "--consistency", "eventual", "service", "ls"),
		usage(`--server: server address "node1:"`, "--server", "node1:", "service", "ls"),
		usage(`port "http" is not a number`, "--server", "node1:http", "service", "ls"),
		usage(`port "70000" is not a number`, "--server", "node1:70000", "service", "ls"),
		usage(`--server: server address "[::1"`, "--server", "[::1", "service", "ls"),
		usage("is a URL", "--server", "https://node1", "service", "ls"),
		usage("neither an IP address nor a host name", "--server", "node 1", "service", "ls"),
		// scale takes NAME=N with N a plain decimal count.
		usage(`the replica count must be a whole number`, "service", "scale", "web=3abc"),
		usage(`the replica count must be a whole number`, "service", "scale", "web=0x2"),
		usage(`the replica count must be a whole number`, "service", "scale", "web=1 2"),
		usage("requires at least 1 arg(s)", "service", "scale"),
		// Output: --format, --filter.
		usage("--format must be table, json or a Go template", "service", "ls", "--format", "yaml"),
		usage("--format must be table, json or a Go template", "service", "ps", "web", "--format", "xml"),
		usage("--format must be table, json or a Go template", "cluster", "status", "--format", "yaml"),
		usage("--format: template:", "node", "ls", "--format", "{{.id"),
		usage(`--filter "bogus=1": no key "bogus"`, "service", "ls", "--filter", "bogus=1"),
		usage(`--filter "name": want KEY=VALUE`, "service", "ls", "--filter", "name"),
		usage(`--filter desired-state="maybe"`, "service", "ps", "web", "--filter", "desired-state=maybe"),
		// Sizes and durations, as Docker reads them.
		usage(`size "64XB"`, create("--limit-memory", "64XB")...),
		usage(`size "-1"`, create("--reserve-memory", "-1")...),
		usage(`time: missing unit in duration "5"`, create("--restart-delay", "5")...),
		usage(`time: unknown unit "x"`, create("--health-interval", "5x")...),
		usage(`time: missing unit in duration "5"`, "node", "issue-join-token", "--ttl", "5"),
		// The update and rollback policy.
		usage(`"--update-delay" flag: want 0s to 1h0m0s`, create("--update-delay", "2h")...),
		usage(`"--update-monitor" flag: want 0s to 1h0m0s`, create("--update-monitor", "-1s")...),
		usage(`"--rollback-monitor" flag: want a duration such as 10s`, create("--rollback-monitor", "1d")...),
		usage(`"--update-order" flag: want stop-first or start-first`, create("--update-order", "middle-first")...),
		usage(`"--update-failure-action" flag: want pause or continue or rollback`, create("--update-failure-action", "explode")...),
		usage(`"--rollback-failure-action" flag: want pause or continue`, create("--rollback-failure-action", "rollback")...),
		usage(`"--update-max-failure-ratio" flag: want a fraction from 0 to 1`, create("--update-max-failure-ratio", "1.5")...),
		usage(`"--rollback-max-failure-ratio" flag: want a fraction from 0 to 1`, create("--rollback-max-failure-ratio", "x")...),
		usage(`"--update-parallelism" flag`, create("--update-parallelism", "-1")...),
		usage(`"--update-order" flag: want stop-first or start-first`, "service", "update", "web", "--update-order", "x"),
		// The rest of the spec.
		usage(`"--mode" flag: want replicated, global`, create("--mode", "foo")...),
		usage(`"--volume-move" flag: want pin, move`, create("--volume-move", "copy")...),
		usage(`"--restart-condition" flag: want any, on-failure, none`, create("--restart-condition", "sometimes")...),
		usage(`"--endpoint-mode" flag: want vip, dnsrr`, create("--endpoint-mode", "ipvs")...),
		usage(`"--endpoint-mode" flag: want vip, dnsrr`, "service", "update", "web", "--endpoint-mode", "VIP"),
		usage(`want SOURCE:TARGET[:ro] or type=bind`, create("--mount", "/a")...),
		usage(`type "npipe": want bind, tmpfs or volume`, create("--mount", "type=npipe,source=a,target=/b")...),
		usage(`a bind mount needs source= and target=`, create("--mount", "type=bind,source=/a")...),
		usage(`tmpfs-size is a tmpfs mount's`, create("--mount", "source=/a,target=/b,tmpfs-size=1m")...),
		usage(`a tmpfs mount has no source`, create("--mount", "type=tmpfs,source=/a,target=/b")...),
		usage(`tmpfs-mode "8": want octal permission bits`, "service", "update", "web", "--mount", "type=tmpfs,target=/t,tmpfs-mode=8"),
		// Process and container options (procflags.go), update as create.
		usage(`--user" flag: want USER or USER:GROUP`, create("--user", "a b")...),
		usage(`"--group" flag: want a group name or numeric id`, create("--group", "")...),
		usage(`--workdir" flag: want a clean absolute path`, create("-w", "app")...),
		usage(`"--hostname" flag: want letters, digits`, create("--hostname", "web_1")...),
		usage(`"--cap-add" flag: capability "NET_WIZARD"`, create("--cap-add", "NET_WIZARD")...),
		usage(`"--cap-drop" flag: capability "x"`, "service", "update", "web", "--cap-drop", "x"),
		usage(`"--sysctl" flag: sysctl "vm.swappiness" is not namespaced`, create("--sysctl", "vm.swappiness=1")...),
		usage(`"--sysctl" flag: "net.core.somaxconn": want KEY=VALUE`, create("--sysctl", "net.core.somaxconn")...),
		usage(`"--sysctl" flag: sysctl net.core.somaxconn is given twice`, create("--sysctl", "net.core.somaxconn=1", "--sysctl", "net.core.somaxconn=2")...),
		usage(`"--ulimit" flag: ulimit "files": want one of`, create("--ulimit", "files=10")...),
		usage(`"--ulimit" flag: ulimit nofile: soft limit 20 above the hard limit 10`, "service", "update", "web", "--ulimit", "nofile=20:10"),
		usage(`"--ulimit" flag: "nofile=many": want NAME=SOFT[:HARD]`, create("--ulimit", "nofile=many")...),
		usage(`"--ulimit" flag: ulimit nofile is given twice`, create("--ulimit", "nofile=1", "--ulimit", "nofile=2")...),
		usage(`"--stop-signal" flag: signal "SIGNOPE"`, create("--stop-signal", "SIGNOPE")...),
		usage(`"--host" flag: extra host "db": want HOST:IP`, create("--host", "db")...),
		usage(`"--dns" flag: want a nameserver's IP address`, create("--dns", "resolver.example")...),
		usage(`"--dns-search" flag: want one word`, create("--dns-search", "a b")...),
		usage(`"--dns-option" flag: want one word`, "service", "update", "web", "--dns-option", ""),
		usage(`"--shm-size" flag: size "64XB"`, create("--shm-size", "64XB")...),
		usage(`invalid argument "maybe" for "--init" flag`, create("--init=maybe")...),
		usage(`--bundle: a hook bundle runs on the node's own file system and host name; hostname, init apply to containers only`,
			"service", "create", "--name", "web", "--bundle", bundleDir, "--hostname", "h", "--init", "--user", "nobody"),
		usage(`want PUBLISHED:TARGET[/udp]`, create("-p", "80")...),
		usage(`ports are numbers from 1 to 65535`, create("-p", "99999:80")...),
		usage(`ports are numbers from 1 to 65535`, create("-p", "0:80")...),
		usage(`protocol "sctp": want tcp or udp`, create("-p", "8080:80/sctp")...),
		usage(`mode "bridge": want ingress or host`, create("-p", "mode=bridge,published=8080,target=80")...),
		usage(`want published=N and target=N`, create("-p", "mode=host,target=80")...),
		usage(`unknown key "port"`, create("-p", "mode=host,port=8080,target=80")...),
		usage(`published is given twice`, create("-p", "published=8080,published=8081,target=80")...),
		usage(`published: ports are numbers from 1 to 65535`, create("-p", "mode=host,published=0,target=80")...),
		usage(`protocol "icmp": want tcp or udp`, create("-p", "published=8080,target=80,protocol=icmp")...),
		usage(`"host" is not KEY=VALUE`, create("-p", "published=8080,target=80,host")...),
		usage(`"--publish-add" flag: want published=N and target=N`, "service", "update", "web", "--publish-add", "mode=host,published=8080"),
		usage(`want PORT[/path]`, create("--health-http", "x")...),
		usage(`want spread=node.labels.KEY`, create("--placement-pref", "zone")...),
		// Secrets and configs: the value only from a file or stdin.
		usage("accepts 2 arg(s), received 1", "secret", "create", "db-pass"),
		usage("accepts 2 arg(s), received 1", "config", "create", "app.yml"),
		usage(`unknown flag: --data`, "secret", "create", "db-pass", "--data", "hunter2", "-"),
		usage(`"--secret" flag: mode "0999": want octal permission bits`, create("--secret", "db-pass,mode=0999")...),
		usage(`"--secret" flag: unknown key "owner"`, create("--secret", "db-pass,owner=root")...),
		usage(`"--secret" flag: no name`, create("--secret", "target=x")...),
		usage(`"--config" flag: uid "root": want a number`, create("--config", "app.yml,uid=root")...),
		usage(`"--secret-add" flag: target is given twice`, "service", "update", "web", "--secret-add", "a,target=x,target=y"),
		usage("--secret replaces the whole list and --secret-rm edits it: give one", "service", "update", "web", "--secret", "a", "--secret-rm", "b"),
		{args: []string{"secret", "create", "db-pass", filepath.Join(file, "missing")}, code: 1, want: "error: secret db-pass: open "},
		// Nodes.
		usage(`--availability must be active, pause or drain`, "node", "update", "--availability", "sleepy", "n1"),
		usage(`--label-add "novalue": want KEY=VALUE`, "node", "update", "--label-add", "novalue", "n1"),
		usage(`--role must be manager or worker`, "node", "issue-join-token", "--role", "king"),
		usage("--cert-file and --key-file go with --rotate", "cluster", "ca", "--cert-file", file, "--key-file", file),
		usage("an external CA needs both --cert-file and --key-file", "cluster", "ca", "--rotate", "--cert-file", file),
		usage("--key-file: open /nonexistent", "cluster", "ca", "--rotate", "--cert-file", file, "--key-file", "/nonexistent"),
		usage(`--filter type="plugin": want one of node`, "events", "--filter", "type=plugin"),
		usage(`--filter "colour=red": no key "colour" here`, "events", "--filter", "colour=red"),
		usage(`invalid argument "yesterday" for "--since" flag`, "events", "--since", "yesterday"),
		usage(`--format must be table or json`, "events", "--format", "yaml"),
		// A local file that cannot be read is no usage mistake: 1, and
		// still before dialling (no unavailable).
		{args: []string{"service", "create", "--name", "web", "--bundle", filepath.Join(file, "missing")}, code: 1, want: "error: hook bundle: "},
	}
	for _, c := range rows {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"--data-dir", t.TempDir(), "--timeout", "1s"}, c.args...), strings.NewReader(""), &stdout, &stderr)
		prefix := "error: "
		if c.code == 2 {
			prefix = "error: usage: "
		}
		line, rest, _ := strings.Cut(stderr.String(), "\n")
		if code != c.code || !strings.HasPrefix(line, prefix) || !strings.Contains(line, c.want) || rest != "" || stdout.Len() != 0 {
			t.Errorf("jaco %s: exit %d, stdout %q, stderr %q; want %d, nothing on stdout and one line %q holding %q",
				strings.Join(c.args, " "), code, stdout.String(), stderr.String(), c.code, prefix, c.want)
		}
	}
}
