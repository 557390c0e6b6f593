package integration

// Small additions to the netns harness for the multi-host recovery tests
// (multihost_recovery_test.go): a command run inside a host's namespace
// with stdin, as an operator pipes a key into the CLI on that machine.

import "strings"

// execStdin is host.exec with stdin: the command runs inside the host's
// namespace and reads stdin from the given text.
func (hs *host) execStdin(env []string, stdin string, args ...string) result {
	return runWithStdin("ip", env, strings.NewReader(stdin), append([]string{"netns", "exec", hs.ns}, args...)...)
}

// unlock runs `jaco node unlock` on d's host, against its local socket,
// with key on stdin (never a flag), as the operator guide says to.
func (d *nsDaemon) unlock(key string) result {
	return d.host.execStdin(nil, key+"\n", jacoBin, "--data-dir", d.dir, "node", "unlock")
}
