package keyring

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
// key, which the node holds only in memory (Keyring.kek), and the TLS
// private key (node/key.pem) is sealed with the data keys: after a restart
// the node is locked until `jaco node unlock` gives the unlock key back. A
// new unlock key therefore rewrites one file, atomically. Every read and
// write of these files goes through the methods below, so a renewed
// certificate or a new data key is sealed like the rest. Workers never
// seal: autolock protects the raft state, which they do not hold. The
// overlay's private key (node/overlay.key, agent/netplane) is sealed as
// the TLS key is.

// DataKeysSealed reports whether this node's data keys are sealed with an
// unlock key, which makes it start locked. A node without data keys (a
// worker, or before init) has none sealed.
func (k *Keyring) DataKeysSealed() (bool, error) {
	sealed, err := encryption.KeyFileSealed(k.dir.DataKeys())
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("data encryption key: %w", err)
	}
	return sealed, nil
}

// dataKeys reads the raft data keys.
func (k *Keyring) dataKeys() (encryption.DataKeys, error) {
	keys, err := encryption.ReadKeyFile(k.dir.DataKeys(), k.UnlockKey())
	if err != nil {
		return encryption.DataKeys{}, fmt.Errorf("data encryption key: %w", err)
	}
	return keys, nil
}

// DataSealer opens the raft data keys, for the raft state to be opened
// with.
func (k *Keyring) DataSealer() (*encryption.Sealer, error) {
	keys, err := k.dataKeys()
	if err != nil {
		return nil, err
	}
	return keys.Sealer()
}

// writeDataKeys stores the raft data keys, sealed when autolock is on.
func (k *Keyring) writeDataKeys(keys encryption.DataKeys) error {
	if err := encryption.WriteKeyFile(k.dir.DataKeys(), keys, k.UnlockKey()); err != nil {
		return fmt.Errorf("data encryption key: %w", err)
	}
	return nil
}

// NewDataKey writes a fresh data key and returns its sealer, for a raft
// state about to be created (init, join, a promotion).
func (k *Keyring) NewDataKey() (*encryption.Sealer, error) {
	dek, err := encryption.NewKey()
	if err != nil {
		return nil, fmt.Errorf("new data key: %w", err)
	}
	keys := encryption.DataKeys{Current: dek}
	if err := k.writeDataKeys(keys); err != nil {
		return nil, err
	}
	return keys.Sealer()
}

// nodeKeySealed reports whether the TLS private key file is sealed.
func (k *Keyring) nodeKeySealed() bool {
	_, _, keyPEM, err := ca.LoadNodeFiles(k.dir.Node())
	return err == nil && encryption.PrivateKeySealed(keyPEM)
}

// LoadNodeFiles reads the CA certificate, the node certificate and the
// node's private key, opened.
func (k *Keyring) LoadNodeFiles() (caPEM, certPEM, keyPEM []byte, err error) {
	caPEM, certPEM, keyPEM, err = ca.LoadNodeFiles(k.dir.Node())
	if err != nil {
		return nil, nil, nil, err
	}
	if encryption.PrivateKeySealed(keyPEM) {
		s, err := k.DataSealer()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("node key: %w", err)
		}
		if keyPEM, err = encryption.OpenPrivateKey(keyPEM, s); err != nil {
			return nil, nil, nil, fmt.Errorf("node key: %w", err)
		}
	}
	return caPEM, certPEM, keyPEM, nil
}

// SaveNodeFiles writes them, the private key sealed with the data keys
// while autolock is on.
func (k *Keyring) SaveNodeFiles(caPEM, certPEM, keyPEM []byte) error {
	var s *encryption.Sealer
	if k.UnlockKey() != nil {
		var err error
		if s, err = k.DataSealer(); err != nil {
			return fmt.Errorf("seal node key: %w", err)
		}
	}
	return ca.SaveNodeFiles(k.dir.Node(), caPEM, certPEM, encryption.SealPrivateKey(keyPEM, s))
}

// OverlaySealer is what the overlay key is sealed with, as the node's TLS
// key is: the data keys while autolock is on, nothing otherwise. The
// network plane asks it each time it writes the key (agent/netplane).
func (k *Keyring) OverlaySealer() (overlay.Sealer, error) {
	if k.UnlockKey() == nil {
		return nil, nil
	}
	s, err := k.DataSealer()
	if err != nil {
		return nil, err
	}
	return s, nil
}

// resealOverlayKey rewrites the overlay key under the node's sealing now,
// when autolock is turned on or off or its keys change (autolock.go), as
// SaveNodeFiles does the TLS key. A node without one has nothing to do.
func (k *Keyring) resealOverlayKey() error {
	path := k.dir.OverlayKey()
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	opener, err := k.DataSealer() // opens under the current and previous data keys
	if err != nil {
		return err
	}
	key, err := overlay.LoadKey(path, opener)
	if err != nil {
		return err
	}
	s, err := k.OverlaySealer()
	if err != nil {
		return err
	}
	return overlay.SaveKey(path, key, s)
}
