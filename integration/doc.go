// Package integration tests jaco end to end: real jacod and jaco processes,
// built once per test run, talking over a unix socket and TCP on 127.0.0.1.
// Nothing is faked in process: what passes here is what an operator gets.
//
// The package has no code of its own; the tests are in *_test.go files.
// Set JACO_TEST_RACE=1 to build the binaries with -race; a race reported by
// any process then fails the test that ran it.
package integration
