package roles

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/jaco-project/jaco/internal/durable"
)

// managers.json keeps the managers' addresses (docs/design.md §12): those
// a join named, for the agent's first session, and then the newer lists
// of the role check and the dispatcher (Poller.ManagersChanged), which
// the role check asks and a restart starts from. The addresses a node
// joined through may have moved since (docs/adr/0038).

// SaveManagers writes addrs to the managers file at path.
func SaveManagers(path string, addrs []string) error {
	data, err := json.Marshal(addrs)
	if err != nil {
		return err
	}
	return durable.WriteFile(path, data, 0o600)
}

// LoadManagers reads the managers file at path; none there is no error
// and no address.
func LoadManagers(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read managers: %w", err)
	}
	var addrs []string
	if err := json.Unmarshal(data, &addrs); err != nil {
		return nil, fmt.Errorf("read managers %s: %w", path, err)
	}
	return addrs, nil
}
