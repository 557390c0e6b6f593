package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/jaco-project/jaco/agent/overlay"
	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/manager/encryption"
)

// The node's private files and the unlock key.
//
// A manager's data keys (raft-dek.key) seal its raft log and snapshots.
// While autolock is on they are sealed in turn with the cluster's unlock
// key, which the node holds only in memory (n.kek), and the TLS private key
// (node/key.pem) is sealed with the data keys: after a restart the node is
// locked until `jaco node unlock` gives the unlock key back. A new unlock
// key therefore rewrites one file, atomically. Every read and write of
// these files goes through the helpers below, so a renewed certificate or
// a new data key is sealed like the rest. Workers never seal: autolock
// protects the raft state, which they do not hold. The overlay's private
// key (node/overlay.key, agent/netplane) is sealed as the TLS key is.

// unlockKey is the key the data keys are sealed with, nil when they are in
// clear.
func (n *Node) unlockKey() *encryption.Key { return n.kek.Load() }

// dataKeysSealed reports whether this node's data keys are sealed with an
// unlock key, which makes it start locked.
func (n *Node) dataKeysSealed() (bool, error) {
	sealed, err := encryption.KeyFileSealed(n.cfg.dekPath())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return sealed, err
}

// dataKeys reads the raft data keys.
func (n *Node) dataKeys() (encryption.DataKeys, error) {
	keys, err := encryption.ReadKeyFile(n.cfg.dekPath(), n.unlockKey())
	if err != nil {
		return encryption.DataKeys{}, fmt.Errorf("data encryption key: %w", err)
	}
	return keys, nil
}

// dataSealer opens the raft data keys.
func (n *Node) dataSealer() (*encryption.Sealer, error) {
	keys, err := n.dataKeys()
	if err != nil {
		return nil, err
	}
	return keys.Sealer()
}

// writeDataKeys stores the raft data keys, sealed when autolock is on.
func (n *Node) writeDataKeys(keys encryption.DataKeys) error {
	return encryption.WriteKeyFile(n.cfg.dekPath(), keys, n.unlockKey())
}

// newDataKey writes a fresh data key and returns its sealer, for a raft
// state about to be created.
func (n *Node) newDataKey() (*encryption.Sealer, error) {
	dek, err := encryption.NewKey()
	if err != nil {
		return nil, err
	}
	keys := encryption.DataKeys{Current: dek}
	if err := n.writeDataKeys(keys); err != nil {
		return nil, err
	}
	return keys.Sealer()
}

// nodeKeySealed reports whether the TLS private key file is sealed.
func (n *Node) nodeKeySealed() bool {
	_, _, keyPEM, err := ca.LoadNodeFiles(n.cfg.nodeDir())
	return err == nil && encryption.PrivateKeySealed(keyPEM)
}

// loadNodeFiles reads the CA certificate, the node certificate and the
// node's private key, opened.
func (n *Node) loadNodeFiles() (caPEM, certPEM, keyPEM []byte, err error) {
	caPEM, certPEM, keyPEM, err = ca.LoadNodeFiles(n.cfg.nodeDir())
	if err != nil {
		return nil, nil, nil, err
	}
	if encryption.PrivateKeySealed(keyPEM) {
		s, err := n.dataSealer()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("node key: %w", err)
		}
		if keyPEM, err = encryption.OpenPrivateKey(keyPEM, s); err != nil {
			return nil, nil, nil, fmt.Errorf("node key: %w", err)
		}
	}
	return caPEM, certPEM, keyPEM, nil
}

// saveNodeFiles writes them, the private key sealed with the data keys
// while autolock is on.
func (n *Node) saveNodeFiles(caPEM, certPEM, keyPEM []byte) error {
	var s *encryption.Sealer
	if n.unlockKey() != nil {
		var err error
		if s, err = n.dataSealer(); err != nil {
			return fmt.Errorf("seal node key: %w", err)
		}
	}
	return ca.SaveNodeFiles(n.cfg.nodeDir(), caPEM, certPEM, encryption.SealPrivateKey(keyPEM, s))
}

// overlaySealer is what the overlay key is sealed with, as the node's TLS
// key is: the data keys while autolock is on, nothing otherwise.
func (n *Node) overlaySealer() (overlay.Sealer, error) {
	if n.unlockKey() == nil {
		return nil, nil
	}
	s, err := n.dataSealer()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// resealOverlayKey rewrites the overlay key under the node's sealing now,
// when autolock is turned on or off or its keys change (autolock.go), as
// saveNodeFiles does the TLS key. A node without one has nothing to do.
func (n *Node) resealOverlayKey() error {
	path := n.cfg.dir().OverlayKey()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	opener, err := n.dataSealer() // opens under the current and previous data keys
	if err != nil {
		return err
	}
	k, err := overlay.LoadKey(path, opener)
	if err != nil {
		return err
	}
	s, err := n.overlaySealer()
	if err != nil {
		return err
	}
	return overlay.SaveKey(path, k, s)
}
