package main

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/jaco-project/jaco/internal/durable"
	"github.com/jaco-project/jaco/internal/ociimage"
)

// DemoRef is the reference the demo image is named by unless --ref says
// otherwise.
const DemoRef = "jaco.local/busybox:latest"

// indexHTML is what the demo image's web server answers on /.
const indexHTML = "hello from a jaco replica\n"

// hostnameCGI answers /cgi-bin/hostname with the replica's hostname, so a
// client can tell which replica answered.
const hostnameCGI = "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\n'\nhostname\n"

// demoImage lists what the demo image holds besides busybox: a web root
// for `httpd -f -p 80 -h /www`, its default command.
func demoImage() []ociimage.Option {
	return []ociimage.Option{
		ociimage.WithFile("/www/index.html", []byte(indexHTML), 0o644),
		ociimage.WithFile("/www/cgi-bin/hostname", []byte(hostnameCGI), 0o755),
		ociimage.WithCmd("httpd", "-f", "-p", "80", "-h", "/www"),
	}
}

func imageCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Build images"}
	var out, ref, busybox string
	build := &cobra.Command{
		Use:   "build -o FILE [--ref REF]",
		Short: "Write an OCI archive of the demo image (static busybox with httpd serving /www on port 80)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return fmt.Errorf("give the output file with -o")
			}
			return writeImage(out, ref, append(demoImage(), ociimage.WithBusybox(busybox))...)
		},
	}
	build.Flags().StringVarP(&out, "output", "o", "", "archive to write (required)")
	build.Flags().StringVar(&ref, "ref", DemoRef, "reference the image is named by")
	build.Flags().StringVar(&busybox, "busybox", ociimage.DefaultBusybox, "statically linked busybox to put in the image")
	cmd.AddCommand(build)
	return cmd
}

// writeImage builds the archive and puts it at path atomically, so a
// failed build leaves no truncated archive behind.
func writeImage(path, ref string, opts ...ociimage.Option) error {
	var buf bytes.Buffer
	err := ociimage.Build(&buf, ref, opts...)
	if err == nil {
		err = durable.WriteFile(path, buf.Bytes(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("build %s: %w", path, err)
	}
	return nil
}
