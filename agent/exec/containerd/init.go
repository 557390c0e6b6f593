package containerd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/containerd/containerd/v2/core/containers"
	"github.com/containerd/containerd/v2/pkg/oci"
)

// A spec with init runs tini as the container's PID 1 (docs/adr/0059):
// it reaps orphaned zombies and forwards the stop ladder's signals to
// the command, which then gets them even without a handler (the kernel
// drops unhandled signals to a namespace's init only). The node's static
// tini is bind-mounted read-only into the container, so images need not
// carry one, and Docker's --init does the same with docker-init.

// InitPath is where a container with init sees the init binary.
const InitPath = "/sbin/jaco-init"

// DefaultInitBinaries are the node paths tried for the init binary, first
// existing wins: Debian's tini-static (package tini), then docker-init
// (a tini-static of package docker.io). It must be static: images hold
// no C library of the node's.
var DefaultInitBinaries = []string{"/usr/bin/tini-static", "/usr/bin/docker-init"}

// WithInitBinary sets the node's static init binary (tini) mounted into
// containers whose spec asks for init, instead of DefaultInitBinaries.
func WithInitBinary(path string) Option { return func(o *options) { o.initBinary = path } }

// initBinary finds the node's init binary, symlinks resolved; the error
// names what is missing and the Debian package that has it.
func (r *Runtime) findInitBinary() (string, error) {
	candidates := DefaultInitBinaries
	if r.initBinary != "" {
		candidates = []string{r.initBinary}
	}
	for _, p := range candidates {
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(real); err == nil && fi.Mode().IsRegular() {
			return real, nil
		}
	}
	return "", fmt.Errorf("init: no init binary on this node: %s missing (install the Debian package tini)",
		strings.Join(candidates, " and "))
}

// withInit runs the process under the init at InitPath: [init, --, argv…].
// It comes after every option setting Process.Args (the image's
// entrypoint and command from oci.WithImageConfig, or the spec's).
func withInit(_ context.Context, _ oci.Client, _ *containers.Container, s *oci.Spec) error {
	if s.Process == nil || len(s.Process.Args) == 0 {
		return errors.New("init: no command to run (neither the spec nor the image sets one)")
	}
	s.Process.Args = append([]string{InitPath, "--"}, s.Process.Args...)
	return nil
}
