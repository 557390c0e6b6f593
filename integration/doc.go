// Package integration tests jaco end to end: real jacod and jaco processes,
// built once per test run. Nothing is faked in process: what passes here is
// what an operator gets.
//
// Single-host tests talk to daemons over their unix sockets and TCP on
// 127.0.0.1. Multi-host tests (the harness in netns*_test.go, the tests in
// multihost_*_test.go) run each daemon in its own network namespace,
// joined through a bridge in a per-test hub namespace, on 198.18.0.0/24
// addresses that are dialled only from inside the namespaces; partitions
// are nftables rules inside them.
// They need root (CI runs as root) and skip, saying so, without it.
//
// The package has no code of its own; the tests are in *_test.go files.
// Set JACO_TEST_RACE=1 to build the binaries with -race; a race reported by
// any process then fails the test that ran it.
package integration
