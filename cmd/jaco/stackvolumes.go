package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/api/reason"
	"github.com/jaco-project/jaco/client"
	"github.com/jaco-project/jaco/internal/compose"
)

// A stack's named volumes (docs/adr/0061-volumes.md, "Compose and
// stacks"; the operator guide's Stacks section). The deploy creates the
// volumes the file declares, labelled as the stack's and with the file's
// driver options, in its one write before the services mounting them
// (stackatomic.go), as it creates networks. stack rm keeps them (their data is never deleted by
// surprise, and Docker's stack rm keeps volumes too); stack rm --volumes
// removes those labelled as the stack's once its replicas have ended.

// listVolumes lists every volume, by name.
func listVolumes(ctx context.Context, c *client.Client, cons api.ReadConsistency) (map[string]*api.Volume, error) {
	vols, err := paging.Collect(func(tok string) ([]*api.Volume, string, error) {
		r, err := c.Control.ListVolumes(ctx, &api.ListVolumesRequest{PageToken: tok, Consistency: cons})
		return r.GetVolumes(), r.GetNextPageToken(), err
	})
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	out := make(map[string]*api.Volume, len(vols))
	for _, v := range vols {
		out[v.GetSpec().GetName()] = v
	}
	return out, nil
}

// lookVolumes lists the volumes and refuses, before any write, an
// external volume that does not exist and one of the stack's that exists
// with other driver options than the file gives: the manager would
// refuse the services mounting it only after the deploy had begun, and
// options cannot change under data.
func (d *deployer) lookVolumes(ctx context.Context, cons api.ReadConsistency) (map[string]*api.Volume, error) {
	if len(d.st.Volumes) == 0 {
		return nil, nil
	}
	have, err := listVolumes(ctx, d.c, cons)
	if err != nil {
		return nil, err
	}
	for _, v := range d.st.Volumes {
		got := have[v.Name]
		switch {
		case v.External && got == nil:
			return nil, fmt.Errorf("external volume %s does not exist (jaco volume create %s)", v.Name, v.Name)
		case v.External || got == nil:
		case !maps.Equal(got.GetSpec().GetOptions(), v.Options):
			return nil, fmt.Errorf("volume %s exists with other driver options (%s) than the file gives (%s): "+
				"give the volume another name, or remove it with jaco volume rm %s (its data goes with it)",
				v.Name, api.VolumeOptionWords(got.GetSpec().GetOptions()), api.VolumeOptionWords(v.Options), v.Name)
		}
	}
	return have, nil
}

// volumeSpecs are the stack's missing volumes, labelled as the stack's
// (so that stack rm --volumes knows them) with the file's labels and
// options; the deploy's one request creates them (stackatomic.go). One
// that exists is used as it is: a volume has no update, and one made by
// hand or by another stack is not taken over (it keeps its labels, and
// stack rm --volumes leaves it).
func (d *deployer) volumeSpecs(have map[string]*api.Volume) []*api.VolumeSpec {
	var out []*api.VolumeSpec
	for _, v := range d.st.Volumes {
		if v.External || have[v.Name] != nil {
			continue
		}
		labels := maps.Clone(v.Labels)
		if labels == nil {
			labels = map[string]string{}
		}
		labels[compose.NamespaceLabel] = d.st.Name
		out = append(out, &api.VolumeSpec{Name: v.Name, Driver: api.LocalVolumeDriver, Options: v.Options, Labels: labels})
	}
	return out
}

// withoutVolumeFill clears what the manager fills into a named volume
// mount (the volume's id and options) so that a stored spec compares
// equal to the file's: the options are checked against the volume by
// lookVolumes and by the manager, not by the comparison.
func withoutVolumeFill(spec *api.ServiceSpec) {
	for _, m := range spec.GetMounts() {
		if api.IsVolumeMount(m) && m.GetSource() != "" {
			m.VolumeId, m.VolumeOptions = "", nil
		}
	}
}

// stackVolumes names the volumes labelled as stack's, sorted. A volume
// without the label (external, made by hand, or another stack's) is never
// the stack's to remove.
func stackVolumes(ctx context.Context, c *client.Client, cons api.ReadConsistency, stack string) ([]string, error) {
	have, err := listVolumes(ctx, c, cons)
	if err != nil {
		return nil, err
	}
	var names []string
	for name, v := range have {
		if v.GetSpec().GetLabels()[compose.NamespaceLabel] == stack {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// keptVolumesLine is what stack rm without --volumes says of the stack's
// volumes: their names and how to remove them.
func keptVolumesLine(stack string, names []string) string {
	return fmt.Sprintf("Keeping volumes %s (their data stays); remove them with jaco stack rm --volumes %s, or jaco volume rm NAME once their replicas have stopped",
		strings.Join(names, ", "), stack)
}

// volumeWait is how long stack rm --volumes waits for the removed
// services' replicas to end: the longest stop ladder among them (a
// replica may take all of it), plus --timeout for the agents to report.
func volumeWait(svcs []*api.Service, timeout time.Duration) time.Duration {
	var longest time.Duration
	for _, s := range svcs {
		stop, abort := api.StopGracePeriods(s.GetSpec())
		longest = max(longest, stop+abort)
	}
	return longest + timeout
}

// volumePoll is how often a volume still in use by stopping replicas is
// tried again.
const volumePoll = 250 * time.Millisecond

// removeVolumes removes the named volumes once the replicas using them
// have ended, waiting until deadline. The manager is the judge of "in
// use" (RemoveVolume is refused volume_in_use while a service names the
// volume or a replica not yet ended mounts it): while no service names
// it, a refusal can only be replicas still stopping, and the removal is
// tried again; a service naming it (one outside the stack) will not go
// away by waiting, and is reported at once. Every volume is tried; the
// refusals are returned together.
func removeVolumes(ctx context.Context, out io.Writer, c *client.Client, names []string, deadline time.Time) error {
	var errs []error
	for _, name := range names {
		fmt.Fprintf(out, "Removing volume %s\n", name)
		if err := removeVolumeWaiting(ctx, out, c, name, deadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func removeVolumeWaiting(ctx context.Context, out io.Writer, c *client.Client, name string, deadline time.Time) error {
	said := false
	for {
		_, err := c.Control.RemoveVolume(ctx, &api.RemoveVolumeRequest{Volume: name})
		if err == nil || reason.Of(err) != reason.VolumeInUse {
			return err
		}
		got, gerr := c.Control.GetVolume(ctx, &api.GetVolumeRequest{Volume: name})
		if gerr != nil {
			return fmt.Errorf("volume %s: %w", name, gerr)
		}
		if len(got.GetServices()) > 0 {
			return err
		}
		if !time.Now().Before(deadline) {
			return fmt.Errorf("volume %s is kept: the stack's replicas using it have not ended in time (the deadline is their stop ladder plus --timeout): %w", name, err)
		}
		if !said {
			fmt.Fprintf(out, "Waiting for the replicas using volume %s to stop\n", name)
			said = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("volume %s: %w", name, ctx.Err())
		case <-time.After(volumePoll):
		}
	}
}
