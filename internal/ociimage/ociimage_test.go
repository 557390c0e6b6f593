package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	digest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/jaco-project/jaco/internal/containerdtest"
	"github.com/jaco-project/jaco/internal/testenv"
)

const ref = "jaco.local/busybox:latest"

func build(t *testing.T, opts ...Option) []byte {
	t.Helper()
	if _, err := os.Stat(DefaultBusybox); err != nil {
		testenv.SkipOrFail(t, "no busybox: %v", err)
	}
	var buf bytes.Buffer
	if err := Build(&buf, ref, opts...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// untar returns the archive's regular files by name.
func untar(t *testing.T, r io.Reader) (files map[string][]byte, links map[string]string) {
	t.Helper()
	files, links = map[string][]byte{}, map[string]string{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, links
		}
		if err != nil {
			t.Fatal(err)
		}
		switch h.Typeflag {
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		case tar.TypeSymlink:
			links[h.Name] = h.Linkname
		}
	}
}

// The archive is a valid OCI layout: every blob matches its digest, the
// index names the image, and the layer holds busybox, its applets and the
// extra files.
func TestBuildLayout(t *testing.T) {
	archive := build(t, WithFile("/var/www/index.html", []byte("hello"), 0o644))
	files, _ := untar(t, bytes.NewReader(archive))
	blob := func(d digest.Digest) []byte {
		b, ok := files["blobs/sha256/"+d.Encoded()]
		if !ok {
			t.Fatalf("blob %s missing", d)
		}
		if got := digest.FromBytes(b); got != d {
			t.Fatalf("blob %s has digest %s", d, got)
		}
		return b
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if _, ok := files["oci-layout"]; !ok {
		t.Fatal("oci-layout missing")
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations[ocispec.AnnotationRefName] != ref {
		t.Fatalf("index manifests %+v: want one named %s", index.Manifests, ref)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &m); err != nil {
		t.Fatal(err)
	}
	var img ocispec.Image
	if err := json.Unmarshal(blob(m.Config.Digest), &img); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(m.Layers[0].Digest)))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.RootFS.DiffIDs) != 1 || img.RootFS.DiffIDs[0] != digest.FromBytes(raw) {
		t.Fatalf("diff ids %v do not match the layer", img.RootFS.DiffIDs)
	}
	lfiles, links := untar(t, bytes.NewReader(raw))
	if len(lfiles["bin/busybox"]) == 0 || links["bin/sh"] != "busybox" || links["bin/httpd"] != "busybox" {
		t.Fatalf("layer lacks busybox or its links: links %v", links)
	}
	if string(lfiles["var/www/index.html"]) != "hello" {
		t.Fatalf("extra file: %q", lfiles["var/www/index.html"])
	}
}

func TestBuildDeterministic(t *testing.T) {
	a, b := build(t), build(t)
	if !bytes.Equal(a, b) {
		t.Fatal("two builds of the same image differ")
	}
}

func TestBuildRejectsRelativeFile(t *testing.T) {
	// Any file does as busybox here: the build must fail on the path, not
	// on a missing binary.
	bb := filepath.Join(t.TempDir(), "busybox")
	if err := os.WriteFile(bb, []byte("not a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Build(io.Discard, ref, WithBusybox(bb), WithFile("etc/x", nil, 0o644))
	if err == nil || !strings.Contains(err.Error(), `"etc/x"`) {
		t.Fatalf("Build with a relative file path = %v, want an error naming it", err)
	}
}

// containerd's import gives the image the reference it was built with.
func TestImportedByContainerd(t *testing.T) {
	archive := build(t)
	d := containerdtest.Start(t)
	c, err := client.New(d.Address())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := namespaces.WithNamespace(context.Background(), "ociimage-test")
	imgs, err := c.Import(ctx, bytes.NewReader(archive))
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if len(imgs) != 1 || imgs[0].Name != ref {
		t.Fatalf("imported %v, want %s", imgs, ref)
	}
	img := client.NewImage(c, imgs[0])
	if err := img.Unpack(ctx, "overlayfs"); err != nil {
		t.Fatalf("unpack: %v", err)
	}
}

// layerHeaders returns the tar headers of the archive's one layer, by name.
func layerHeaders(t *testing.T, archive []byte) map[string]*tar.Header {
	t.Helper()
	files, _ := untar(t, bytes.NewReader(archive))
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(files["blobs/sha256/"+index.Manifests[0].Digest.Encoded()], &m); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(files["blobs/sha256/"+m.Layers[0].Digest.Encoded()]))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*tar.Header{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

// WithDir and WithOwner give directories and files the mode and owner
// asked for; a parent made on the way is root's, mode 0755.
func TestBuildDirsAndOwners(t *testing.T) {
	h := layerHeaders(t, build(t,
		WithFile("/data/seed", []byte("seed"), 0o640), WithOwner("/data/seed", 472, 473),
		WithDir("/data", 0o750), WithOwner("/data", 472, 0),
		WithDir("/data/sub", 0o775|os.ModeSetgid), WithOwner("/data/sub", 472, 472),
		WithDir("/srv/empty", 0o700),
	))
	for _, w := range []struct {
		name     string
		typ      byte
		mode     int64
		uid, gid int
	}{
		{"data/", tar.TypeDir, 0o750, 472, 0},
		{"data/seed", tar.TypeReg, 0o640, 472, 473},
		{"data/sub/", tar.TypeDir, 0o2775, 472, 472},
		{"srv/", tar.TypeDir, 0o755, 0, 0},
		{"srv/empty/", tar.TypeDir, 0o700, 0, 0},
	} {
		got, ok := h[w.name]
		if !ok {
			t.Errorf("%s: not in the layer", w.name)
			continue
		}
		if got.Typeflag != w.typ || got.Mode != w.mode || got.Uid != w.uid || got.Gid != w.gid {
			t.Errorf("%s: type %c mode %o owner %d:%d; want type %c mode %o owner %d:%d",
				w.name, got.Typeflag, got.Mode, got.Uid, got.Gid, w.typ, w.mode, w.uid, w.gid)
		}
	}
}
