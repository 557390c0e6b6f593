package containerd

import (
	"context"
	"fmt"
	"io"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/errdefs"
	"github.com/distribution/reference"

	"github.com/jaco-project/jaco/api"
)

// LoadImage imports an OCI (or Docker) image archive into the node's
// namespace, unpacks every image in it for this platform and returns their
// names. Images without a name in the archive are not imported.
func (r *Runtime) LoadImage(ctx context.Context, archive io.Reader) ([]string, error) {
	imgs, err := r.client.Import(ctx, archive)
	if err != nil {
		return nil, fmt.Errorf("load image archive: %w", err)
	}
	names := make([]string, 0, len(imgs))
	for _, i := range imgs {
		img := client.NewImage(r.client, i)
		if err := img.Unpack(ctx, Snapshotter); err != nil {
			return names, fmt.Errorf("unpack image %s: %w", i.Name, err)
		}
		names = append(names, i.Name)
	}
	return names, nil
}

// normalizeRef turns a user's image reference into containerd's full name
// ("busybox" is "docker.io/library/busybox:latest").
func normalizeRef(ref string) (string, error) {
	named, err := reference.ParseDockerRef(ref)
	if err != nil {
		return "", fmt.Errorf("image reference %q: %w", ref, err)
	}
	return named.String(), nil
}

// ensureImage returns the unpacked image ref, pulling it with auth's
// credentials (auth may be nil) when the node does not have it. A failed
// pull is an *exec.PullError.
func (r *Runtime) ensureImage(ctx context.Context, ref string, auth *api.RegistryAuth) (client.Image, error) {
	name, err := normalizeRef(ref)
	if err != nil {
		return nil, err
	}
	img, err := r.client.GetImage(ctx, name)
	if errdefs.IsNotFound(err) {
		r.log.InfoContext(ctx, "pulling image", "image", name)
		img, err = r.client.Pull(ctx, name, client.WithPullUnpack, client.WithPullSnapshotter(Snapshotter),
			client.WithResolver(resolver(auth)))
		if err != nil {
			return nil, pullError(name, fmt.Errorf("image is not on this node (`jaco image load FILE` puts it there) and pulling it failed: %w", err))
		}
		return img, nil
	}
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", name, err)
	}
	unpacked, err := img.IsUnpacked(ctx, Snapshotter)
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", name, err)
	}
	if !unpacked {
		if err := img.Unpack(ctx, Snapshotter); err != nil {
			return nil, fmt.Errorf("unpack image %s: %w", name, err)
		}
	}
	return img, nil
}
