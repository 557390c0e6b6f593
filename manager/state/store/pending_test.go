package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

// A Tx keeps the steps it checked out of its transaction until something
// reads (pending). Run the same random writes twice, once reading after
// each action (every step written before the next check, as when checks
// had no pending steps) and once reading nothing: each action must get
// the same verdict, and the stores the same content.
func TestPendingChecksAgreeWithWrittenOnes(t *testing.T) {
	kinds := []api.StoreAction_Kind{api.StoreAction_KIND_CREATE, api.StoreAction_KIND_UPDATE, api.StoreAction_KIND_DELETE}
	// run draws the same script for both: each object's version is the
	// stored one as of the round's start (read outside the Tx, so the
	// same in both runs while they agree), 0 (what a write on an object
	// created earlier in the Tx carries) or a guess.
	run := func(readAfterEach bool) (*Store, []string) {
		s, _ := withProposer(t)
		rng := rand.New(rand.NewPCG(3, 4))
		pick := func(prefix string, n int) string { return prefix + strconv.Itoa(rng.IntN(n)) }
		var verdicts []string
		for round := range 40 {
			stored := map[string]uint64{}
			s.View(func(r ReadTx) {
				for _, n := range r.ListNodes() {
					stored[n.GetId()] = n.GetMeta().GetVersion()
				}
				for _, tk := range r.ListTasks() {
					stored[tk.GetId()] = tk.GetMeta().GetVersion()
				}
			})
			err := s.Update(context.Background(), func(tx *Tx) error {
				for range 30 {
					var obj Object = &api.Task{Id: pick("t", 6), ServiceId: pick("s", 2), NodeId: pick("n", 4)}
					// Every other round writes tasks alone, so more steps
					// pend than are searched one by one (pendingScan).
					if round%2 == 0 && rng.IntN(4) == 0 { // a table with a unique hostname
						obj = &api.Node{Id: pick("n", 4), Hostname: pick("h", 4)}
					}
					version := stored[obj.GetId()]
					switch rng.IntN(4) {
					case 0:
						version = 0
					case 1:
						version = rng.Uint64N(12)
					}
					mutableMeta(obj).Version = version
					verdicts = append(verdicts, fmt.Sprint(tx.record(kinds[rng.IntN(len(kinds))], obj)))
					if readAfterEach {
						tx.GetTask("none")
					}
				}
				return nil
			})
			verdicts = append(verdicts, fmt.Sprint("update: ", err))
		}
		return s, verdicts
	}
	written, want := run(true)
	pended, got := run(false)
	if !slices.Equal(got, want) {
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("verdict %d = %q, want %q (as with every step written)", i, got[i], want[i])
			}
		}
	}
	accepted := 0
	for _, v := range want {
		if v == "<nil>" {
			accepted++
		}
	}
	if accepted < len(want)/4 || accepted == len(want) {
		t.Fatalf("%d of %d actions accepted: the script is too tame or too wild to compare", accepted, len(want))
	}
	a, b := withoutTimes(written.Save()), withoutTimes(pended.Save())
	if !proto.Equal(a, b) {
		t.Fatalf("stores differ:\n%v\n%v", a, b)
	}
}

// withoutTimes clears the timestamps of snap's nodes and tasks, which
// come from the clock of each Update.
func withoutTimes(snap *api.StoreSnapshot) *api.StoreSnapshot {
	for _, n := range snap.GetNodes() {
		n.Meta.CreatedAt, n.Meta.UpdatedAt = nil, nil
	}
	for _, tk := range snap.GetTasks() {
		tk.Meta.CreatedAt, tk.Meta.UpdatedAt = nil, nil
	}
	return snap
}
