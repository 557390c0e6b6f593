package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/jaco-project/jaco/internal/ociimage"
	"github.com/jaco-project/jaco/internal/testenv"
)

// The demo image the demo script loads: named as asked, serving /www with
// httpd by default, its page and hostname CGI in the layer.
func TestImageBuild(t *testing.T) {
	if _, err := os.Stat(ociimage.DefaultBusybox); err != nil {
		testenv.SkipOrFail(t, "no static busybox (apt-get install busybox-static): %v", err)
	}
	out := filepath.Join(t.TempDir(), "demo.tar")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"image", "build", "-o", out, "--ref", "example.test/demo:1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	blobs := readTar(t, mustRead(t, out))
	var index ocispec.Index
	mustJSON(t, blobs["index.json"], &index)
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations[ocispec.AnnotationRefName] != "example.test/demo:1" {
		t.Fatalf("index names %+v, want one manifest named example.test/demo:1", index.Manifests)
	}
	var manifest ocispec.Manifest
	mustJSON(t, blobs["blobs/sha256/"+index.Manifests[0].Digest.Encoded()], &manifest)
	var config ocispec.Image
	mustJSON(t, blobs["blobs/sha256/"+manifest.Config.Digest.Encoded()], &config)
	if want := []string{"httpd", "-f", "-p", "80", "-h", "/www"}; !slices.Equal(config.Config.Cmd, want) {
		t.Errorf("default command %q, want %q", config.Config.Cmd, want)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blobs["blobs/sha256/"+manifest.Layers[0].Digest.Encoded()]))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	files := readTar(t, layer)
	if got := string(files["www/index.html"]); got != indexHTML {
		t.Errorf("www/index.html = %q, want %q", got, indexHTML)
	}
	if got := string(files["www/cgi-bin/hostname"]); !strings.HasPrefix(got, "#!/bin/sh") {
		t.Errorf("www/cgi-bin/hostname = %q, want a shell script", got)
	}
}

func TestImageBuildNeedsOutput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"image", "build"}, &stdout, &stderr); code == 0 || !strings.Contains(stderr.String(), "-o") {
		t.Fatalf("exit %d, stderr %q; want a failure naming -o", code, stderr.String())
	}
}

// A build that fails leaves nothing at the output path, nor a temporary
// file beside it.
func TestImageBuildFailureLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "demo.tar")
	var stdout, stderr bytes.Buffer
	code := run([]string{"image", "build", "-o", out, "--busybox", filepath.Join(dir, "no-busybox")}, &stdout, &stderr)
	if code == 0 {
		t.Fatal("build with a missing busybox succeeded")
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		t.Fatalf("dir after a failed build holds %v (%v), want nothing", ents, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %T: %v (%q)", v, err, data)
	}
}

// readTar returns the regular files of a tar by name.
func readTar(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = b
	}
}
