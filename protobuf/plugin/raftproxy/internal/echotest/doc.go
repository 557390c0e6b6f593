// Package echotest is a small service compiled with the real protoc plugins,
// so the forwarding test exercises the code protoc-gen-raftproxy generates
// rather than a hand-written imitation.
package echotest
