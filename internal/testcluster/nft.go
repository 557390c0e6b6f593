package testcluster

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// PartitionTable is the nftables table a host's partition rules live in,
// inside the host's namespace (never the root namespace's ruleset).
const PartitionTable = "jacotest"

// NFT loads ruleset into the host's namespace with `nft -f`, as one
// transaction: a ruleset that creates, deletes and creates a table anew
// replaces it atomically.
func (hs *Host) NFT(ctx context.Context, ruleset string) error {
	if _, err := exec.LookPath("nft"); err != nil {
		return errors.New("partitions need nftables' nft (apt-get install nftables; scripts/test.sh installs it)")
	}
	cmd := hs.Command(ctx, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s\nruleset:\n%s", hs.name, err, strings.TrimSpace(string(out)), ruleset)
	}
	return nil
}

// Partition makes hs drop every packet to or from the given hosts, as a
// broken link between them would: nothing is refused, it just never
// arrives. It replaces an earlier partition of hs. Dropping on one side
// is enough to cut both directions of every connection, so a caller
// cutting two groups apart writes rules on one group's hosts only.
func (hs *Host) Partition(ctx context.Context, from ...*Host) error {
	if len(from) == 0 {
		return fmt.Errorf("partition %s: no hosts to cut off", hs.name)
	}
	ips := make([]string, len(from))
	for i, o := range from {
		ips[i] = o.ip
	}
	// Create-if-missing, delete, create anew: a second partition replaces
	// the first in the same transaction.
	return hs.NFT(ctx, fmt.Sprintf(`table inet %[1]s
delete table inet %[1]s
table inet %[1]s {
	set cut {
		type ipv4_addr
		elements = { %[2]s }
	}
	chain input {
		type filter hook input priority filter; policy accept;
		ip saddr @cut drop
	}
	chain output {
		type filter hook output priority filter; policy accept;
		ip daddr @cut drop
	}
}
`, PartitionTable, strings.Join(ips, ", ")))
}

// Heal removes hs's partition, if any.
func (hs *Host) Heal(ctx context.Context) error {
	return hs.NFT(ctx, fmt.Sprintf("table inet %[1]s\ndelete table inet %[1]s\n", PartitionTable))
}
