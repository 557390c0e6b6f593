package containerd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/internal/durable"
)

// stateFile is the file in Replica.Dir keeping what containerd does not:
// the replica's network namespace, the address CNI gave it and, on
// overlay networks, how it attaches to each and the addresses it got (so
// teardown and adoption after an agent restart need not ask the node).
const stateFile = "containerd.json"

type replicaState struct {
	// Netns is the bind-mounted network namespace's path.
	Netns string `json:"netns,omitempty"`
	// Address is the container's IP on the node's bridge; set once CNI
	// setup succeeded (and cleared by teardown).
	Address string `json:"address,omitempty"`
	// Networks are the spec's overlay networks as resolved at Prepare, in
	// the spec's order (eth1, eth2, …).
	Networks []exec.Attachment `json:"networks,omitempty"`
	// NetworkAddresses are the addresses on Networks; set once their CNI
	// setup succeeded.
	NetworkAddresses []exec.NetworkAddress `json:"network_addresses,omitempty"`
}

func loadState(dir string) (replicaState, error) {
	var s replicaState
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("read replica state: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("read replica state %s: %w", filepath.Join(dir, stateFile), err)
	}
	return s, nil
}

func saveState(dir string, s replicaState) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("replica dir: %w", err)
	}
	if err := durable.WriteFile(filepath.Join(dir, stateFile), b, 0o600); err != nil {
		return fmt.Errorf("write replica state: %w", err)
	}
	return nil
}
