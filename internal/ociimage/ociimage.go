// Package ociimage builds small OCI image archives from files on this
// machine, for tests, benchmarks and the demo (no registry exists here).
//
// Build writes a tar in OCI image layout (oci-layout, index.json,
// blobs/sha256/...) holding one image for linux on this machine's
// architecture: a single gzip layer with a busybox rootfs (the static
// binary plus one symlink per applet named in Applets) and any extra files.
// The index entry carries the reference both as
// org.opencontainers.image.ref.name and io.containerd.image.name, so
// `ctr import` and containerd's client import name the image ref.
//
// The output is deterministic: the same inputs give the same digests.
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"time"

	digest "github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// DefaultBusybox is where Debian's busybox-static puts the binary.
const DefaultBusybox = "/bin/busybox"

// Applets are the busybox commands linked into /bin.
var Applets = []string{
	"sh", "ash", "cat", "echo", "env", "false", "grep", "hostname", "httpd",
	"id", "ip", "kill", "ls", "mkdir", "nc", "ps", "rm", "sleep", "test",
	"touch", "true", "wc", "wget",
}

// AnnotationImageName is containerd's name annotation on index entries.
const AnnotationImageName = "io.containerd.image.name"

// epoch is the mtime of every file, so builds are reproducible.
var epoch = time.Unix(0, 0).UTC()

type config struct {
	busybox string
	files   []file
	cmd     []string
	// dirs are directories WithDir adds, by path: their mode.
	dirs map[string]int64
	// owners are WithOwner's uid and gid, by path.
	owners map[string][2]int
}

type file struct {
	path string
	data []byte
	mode int64
}

// Option changes what Build puts in the image.
type Option func(*config)

// WithBusybox takes the busybox binary from path instead of DefaultBusybox.
// It must be statically linked: the image holds no libraries.
func WithBusybox(path string) Option { return func(c *config) { c.busybox = path } }

// WithFile adds a file at the absolute path p (parent directories are
// made) with the given content and permission bits.
func WithFile(p string, data []byte, mode os.FileMode) Option {
	return func(c *config) { c.files = append(c.files, file{path: p, data: data, mode: int64(mode.Perm())}) }
}

// WithDir adds a directory at the absolute path p (parent directories
// are made) with the given permission bits (setuid, setgid and sticky
// included). A directory WithFile or another path makes has mode 0755.
func WithDir(p string, mode os.FileMode) Option {
	return func(c *config) {
		if c.dirs == nil {
			c.dirs = map[string]int64{}
		}
		c.dirs[p] = tarMode(mode)
	}
}

// WithOwner makes the file or directory at p (one WithFile or WithDir
// adds, or a parent they make) owned by uid and gid; the rest are root's.
func WithOwner(p string, uid, gid int) Option {
	return func(c *config) {
		if c.owners == nil {
			c.owners = map[string][2]int{}
		}
		c.owners[p] = [2]int{uid, gid}
	}
}

// tarMode is mode's permission bits with setuid, setgid and sticky, as a
// tar header holds them.
func tarMode(mode os.FileMode) int64 {
	m := int64(mode.Perm())
	if mode&os.ModeSetuid != 0 {
		m |= 0o4000
	}
	if mode&os.ModeSetgid != 0 {
		m |= 0o2000
	}
	if mode&os.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}

// WithCmd sets the image's default command (default ["sh"]).
func WithCmd(argv ...string) Option { return func(c *config) { c.cmd = argv } }

// Build writes an OCI archive of one image named ref (for instance
// "jaco.local/busybox:latest") to w.
func Build(w io.Writer, ref string, opts ...Option) error {
	if ref == "" {
		return fmt.Errorf("build image: empty reference")
	}
	c := config{busybox: DefaultBusybox, cmd: []string{"sh"}}
	for _, o := range opts {
		o(&c)
	}
	bb, err := os.ReadFile(c.busybox)
	if err != nil {
		return fmt.Errorf("build image %s: read busybox: %w", ref, err)
	}
	layer, diffID, err := buildLayer(bb, c)
	if err != nil {
		return fmt.Errorf("build image %s: layer: %w", ref, err)
	}
	return writeLayout(w, ref, c, layer, diffID)
}

// buildLayer returns the gzip layer and the digest of its uncompressed tar.
func buildLayer(busybox []byte, c config) (gz []byte, diffID digest.Digest, err error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	dirs := map[string]bool{}
	own := func(h *tar.Header) *tar.Header {
		if o, ok := c.owners["/"+strings.TrimSuffix(h.Name, "/")]; ok {
			h.Uid, h.Gid = o[0], o[1]
		}
		return h
	}
	mkdir := func(p string) error {
		var parts []string
		for d := path.Dir(p); d != "/" && d != "."; d = path.Dir(d) {
			parts = append([]string{d}, parts...)
		}
		parts = append(parts, p)
		for _, d := range parts {
			if dirs[d] {
				continue
			}
			dirs[d] = true
			mode, ok := c.dirs[d]
			if !ok {
				mode = 0o755
			}
			if err := tw.WriteHeader(own(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: mode, ModTime: epoch})); err != nil {
				return err
			}
		}
		return nil
	}
	writeFile := func(f file) error {
		if !path.IsAbs(f.path) || path.Clean(f.path) != f.path {
			return fmt.Errorf("file path %q: want a clean absolute path", f.path)
		}
		if err := mkdir(path.Dir(f.path)); err != nil {
			return err
		}
		h := own(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(f.path, "/"), Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch})
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err := tw.Write(f.data)
		return err
	}
	// Mount points runc expects, and a world-writable /tmp.
	for _, d := range []string{"/dev", "/proc", "/sys", "/etc", "/root", "/var/www"} {
		if err := mkdir(d); err != nil {
			return nil, "", err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: epoch}); err != nil {
		return nil, "", err
	}
	base := []file{
		{path: "/bin/busybox", data: busybox, mode: 0o755},
		{path: "/etc/passwd", data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"), mode: 0o644},
		{path: "/etc/group", data: []byte("root:x:0:\nnogroup:x:65534:\n"), mode: 0o644},
	}
	for _, f := range base {
		if err := writeFile(f); err != nil {
			return nil, "", err
		}
	}
	for _, a := range slices.Sorted(slices.Values(Applets)) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, ModTime: epoch}); err != nil {
			return nil, "", err
		}
	}
	for _, f := range c.files {
		if err := writeFile(f); err != nil {
			return nil, "", err
		}
	}
	for _, d := range slices.Sorted(maps.Keys(c.dirs)) {
		if !path.IsAbs(d) || path.Clean(d) != d || d == "/" {
			return nil, "", fmt.Errorf("directory path %q: want a clean absolute path", d)
		}
		if err := mkdir(d); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	diffID = digest.FromBytes(raw.Bytes())
	var out bytes.Buffer
	zw := gzip.NewWriter(&out) // header without name or mtime: deterministic
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return out.Bytes(), diffID, nil
}

// writeLayout writes the layout tar: config, manifest and layer blobs, then
// index.json and oci-layout.
func writeLayout(w io.Writer, ref string, c config, layer []byte, diffID digest.Digest) error {
	imgConfig := ocispec.Image{
		Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Config:   ocispec.ImageConfig{Env: []string{"PATH=/bin"}, Cmd: c.cmd, WorkingDir: "/"},
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{diffID}},
		Created:  &epoch,
	}
	cfgBytes, err := json.Marshal(imgConfig)
	if err != nil {
		return err
	}
	manifest := ocispec.Manifest{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest,
		Config:    descriptor(ocispec.MediaTypeImageConfig, cfgBytes),
		Layers:    []ocispec.Descriptor{descriptor(ocispec.MediaTypeImageLayerGzip, layer)},
	}
	manBytes, err := json.Marshal(manifest)
	if err != nil {
		return err
	}
	manDesc := descriptor(ocispec.MediaTypeImageManifest, manBytes)
	manDesc.Platform = &imgConfig.Platform
	manDesc.Annotations = map[string]string{
		ocispec.AnnotationRefName: ref,
		AnnotationImageName:       ref,
	}
	index := ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{manDesc},
	}
	idxBytes, err := json.Marshal(index)
	if err != nil {
		return err
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	entries := []struct {
		name string
		data []byte
	}{
		{ocispec.ImageLayoutFile, layout},
		{"blobs/sha256/" + manifest.Layers[0].Digest.Encoded(), layer},
		{"blobs/sha256/" + manifest.Config.Digest.Encoded(), cfgBytes},
		{"blobs/sha256/" + manDesc.Digest.Encoded(), manBytes},
		{ocispec.ImageIndexFile, idxBytes},
	}
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch}); err != nil {
			return fmt.Errorf("write archive: %w", err)
		}
	}
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: epoch}); err != nil {
			return fmt.Errorf("write archive: %w", err)
		}
		if _, err := tw.Write(e.data); err != nil {
			return fmt.Errorf("write archive: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	return nil
}

func descriptor(mediaType string, data []byte) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.FromBytes(data), Size: int64(len(data))}
}
