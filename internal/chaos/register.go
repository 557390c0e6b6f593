package chaos

import (
	"context"
	"strconv"
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/linearcheck"
)

// registerKeys are the services the register workload works on in one
// episode of the schedule. Every episode gets fresh keys, which keeps each
// key's history short for porcupine however long the run.
type registerKeys struct {
	names atomic.Pointer[[]string]
}

func (k *registerKeys) current() []string {
	if p := k.names.Load(); p != nil {
		return *p
	}
	return nil
}

// registerSpec is a register service's spec holding value: the update
// policy's parallelism, which replaces no replica when it changes, so only
// the clients ever change the service (and its meta.version).
func registerSpec(name string, value uint64) *api.ServiceSpec {
	return &api.ServiceSpec{Name: name, Image: "busybox", Update: &api.UpdatePolicy{Parallelism: value}}
}

// createRegister creates the register name through control and records
// the create as a write expecting the key absent, so the checker knows
// where the register starts. The error is the call's, unwrapped.
func createRegister(ctx context.Context, control api.ControlServiceClient, rec *linearcheck.Recorder, client int, name string) error {
	p := rec.Invoke(client, "write", linearcheck.RegisterInput{Key: name, Write: true, Value: "0"})
	resp, err := control.CreateService(ctx, &api.CreateServiceRequest{Spec: registerSpec(name, 0)})
	if err != nil {
		p.DoneErr(nil, err)
		return err
	}
	p.Done(linearcheck.RegisterOutput{Version: resp.Service.GetMeta().GetVersion()}, linearcheck.OK)
	return nil
}

// registerClient reads keys linearizably and writes them with
// compare-and-set on the version it last saw.
type registerClient struct {
	*worker
	keys *registerKeys
	// known is what this client last learned of each key: the spec to
	// send back and the version to expect. Absent: read before writing.
	known map[string]*api.Service
	seq   uint64
	// consistency of reads: linearizable, but for the test that shows
	// the checker catches stale local reads.
	consistency api.ReadConsistency
}

func (c *registerClient) op(ctx context.Context) bool {
	keys := c.keys.current()
	if len(keys) == 0 {
		return true
	}
	key := keys[c.rng.IntN(len(keys))]
	if svc := c.known[key]; svc != nil && c.rng.IntN(2) == 0 {
		return c.write(ctx, key, svc)
	}
	return c.read(ctx, key)
}

func (c *registerClient) read(ctx context.Context, key string) bool {
	p := c.rec.Invoke(c.id, "read", linearcheck.RegisterInput{Key: key})
	resp, err := c.control.GetService(ctx, &api.GetServiceRequest{
		Service: key, Consistency: c.consistency})
	if err != nil {
		p.DoneErr(nil, err)
		return false
	}
	svc := resp.Service
	p.Done(linearcheck.RegisterOutput{
		Value:   strconv.FormatUint(svc.GetSpec().GetUpdate().GetParallelism(), 10),
		Version: svc.GetMeta().GetVersion(),
	}, linearcheck.OK)
	c.known[key] = svc
	return true
}

func (c *registerClient) write(ctx context.Context, key string, was *api.Service) bool {
	// Unique across the run: client id in the high bits.
	c.seq++
	value := uint64(c.id+1)<<32 | c.seq
	// The spec as read, only the register changed: any other difference
	// would replace replicas and make the orchestrator write the service.
	spec := proto.CloneOf(was.Spec)
	if spec.Update == nil {
		spec.Update = &api.UpdatePolicy{}
	}
	spec.Update.Parallelism = value
	expect := was.GetMeta().GetVersion()
	p := c.rec.Invoke(c.id, "write", linearcheck.RegisterInput{
		Key: key, Write: true, Value: strconv.FormatUint(value, 10), Expect: expect})
	resp, err := c.control.UpdateService(ctx, &api.UpdateServiceRequest{Service: key, Version: expect, Spec: spec})
	if err != nil {
		p.DoneErr(nil, err)
		// Whatever happened, the version this client holds is no good
		// now; it reads again before its next write of key.
		delete(c.known, key)
		return linearcheck.OutcomeOf(err) == linearcheck.Refused
	}
	// The answer is the service as the leader's store holds it after the
	// write, which may already include a later write: its version is this
	// write's only when it still holds this write's value. Otherwise the
	// write is recorded with version 0, unknown, which the model accepts
	// for any version a later operation reveals.
	svc := resp.Service
	out := linearcheck.RegisterOutput{}
	if svc.GetSpec().GetUpdate().GetParallelism() == value {
		out.Version = svc.GetMeta().GetVersion()
		c.known[key] = svc
	} else {
		delete(c.known, key)
	}
	p.Done(out, linearcheck.OK)
	c.acked.Add(1)
	return true
}
