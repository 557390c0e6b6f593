package api

import (
	"bytes"

	"google.golang.org/protobuf/proto"
)

// specsKept is how many spec versions of one service Specs keeps: the
// current one and the one an update or rollback replaces, with room.
const specsKept = 4

// specsAliased is how many other copies of a kept spec Specs remembers.
const specsAliased = 4

// Specs lets the tasks a component holds share one copy of each spec
// version their service runs. Every task carries its service's spec, and
// every task decoded (from the log, a snapshot, a watch event) has its own
// copy: about 2 KB of a task's 3 KB in memory. Sharing is for holders that
// never change a task's spec in place. It is a cache: a task whose spec
// equals none kept keeps its own copy, which is kept for the next. The
// zero value is not usable; make one with NewSpecs. Not safe for
// concurrent use.
type Specs struct {
	// byService holds, per service id, the specs kept, newest last.
	byService map[string][]keptSpec
	// scratch is where a spec is encoded to be compared: most are equal
	// to one kept and need no encoding of their own, and a fresh 2 KB a
	// task was 200 MB of garbage in a restart with 100 000 tasks.
	scratch []byte
	// encodings counts the specs encoded to be compared.
	encodings int
}

type keptSpec struct {
	version uint64
	spec    *ServiceSpec
	// aliases are the last specsAliased other copies found equal to spec:
	// a decoder that shares one copy among the tasks it decodes (a
	// restart's snapshot and replay) hands over many tasks with each, and
	// those after the first are shared without an encoding.
	aliases []*ServiceSpec
	// encoded is spec's deterministic encoding. Equal encodings are equal
	// specs, and comparing them is about three times cheaper than
	// proto.Equal, which was 2 s of a restart replaying 200 000 task
	// writes. (Unequal encodings of equal specs only cost a copy.)
	encoded []byte
}

// NewSpecs returns an empty cache.
func NewSpecs() *Specs { return &Specs{byService: map[string][]keptSpec{}} }

var deterministic = proto.MarshalOptions{Deterministic: true}

// Share points t's spec at the kept copy equal to it, or keeps t's.
func (c *Specs) Share(t *Task) {
	spec := t.GetSpec()
	if spec == nil {
		return
	}
	kept := c.byService[t.GetServiceId()]
	for _, k := range kept {
		if k.spec == spec {
			return
		}
		for _, a := range k.aliases {
			if a == spec && k.version == t.GetSpecVersion() {
				t.Spec = k.spec
				return
			}
		}
	}
	encoded, err := deterministic.MarshalAppend(c.scratch[:0], spec)
	if err != nil {
		return // nothing to compare: it keeps its own copy
	}
	c.scratch = encoded
	c.encodings++
	for i, k := range kept {
		if k.version == t.GetSpecVersion() && bytes.Equal(k.encoded, encoded) {
			t.Spec = k.spec
			if len(k.aliases) == specsAliased {
				k.aliases = k.aliases[1:]
			}
			kept[i].aliases = append(k.aliases, spec)
			return
		}
	}
	if len(kept) == specsKept {
		kept = kept[1:]
	}
	c.byService[t.GetServiceId()] = append(kept, keptSpec{version: t.GetSpecVersion(), spec: spec, encoded: bytes.Clone(encoded)})
}

// Forget drops the specs kept for a removed service.
func (c *Specs) Forget(serviceID string) { delete(c.byService, serviceID) }
