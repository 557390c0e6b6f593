package ca

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/jaco-project/jaco/internal/durable"
)

// Names of the node's files in its directory ($JACO_DATA_DIR/node).
const (
	CAFile   = "ca.pem"
	CertFile = "cert.pem"
	KeyFile  = "key.pem"
)

// SaveNodeFiles writes the CA certificate, the node certificate and the node
// key into dir (created 0700 if missing); the key file is 0600, the
// certificates 0644. Each file is replaced atomically (temporary file, fsync,
// rename, directory fsync), and all three are written and synced before the
// first rename, so a crash leaves at most a short window in which the set is
// mixed. The CA private key is never among them.
func SaveNodeFiles(dir string, caPEM, certPEM, keyPEM []byte) (err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("save node files: %w", err)
	}
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{KeyFile, keyPEM, 0o600},
		{CertFile, certPEM, 0o644},
		{CAFile, caPEM, 0o644},
	}
	temps := make([]string, 0, len(files))
	defer func() {
		if err != nil {
			// Best effort: renamed files are gone already, the others are
			// hidden dot files that the next save does not trip over.
			for _, tmp := range temps {
				_ = os.Remove(tmp)
			}
		}
	}()
	for _, f := range files {
		tmp, err := durable.WriteTemp(dir, f.name, f.data, f.mode)
		if tmp != "" {
			temps = append(temps, tmp)
		}
		if err != nil {
			return fmt.Errorf("save node files: %w", err)
		}
	}
	for i, f := range files {
		if err := os.Rename(temps[i], filepath.Join(dir, f.name)); err != nil {
			return fmt.Errorf("save node files: %w", err)
		}
	}
	if err := durable.SyncDir(dir); err != nil {
		return fmt.Errorf("save node files: %w", err)
	}
	return nil
}

// LoadNodeFiles reads the files SaveNodeFiles wrote. When any is missing the
// error wraps os.ErrNotExist (a node that has not joined a cluster yet).
func LoadNodeFiles(dir string) (caPEM, certPEM, keyPEM []byte, err error) {
	names := [...]string{CAFile, CertFile, KeyFile}
	var data [len(names)][]byte
	for i, name := range names {
		data[i], err = os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("load node files: %w", err)
		}
	}
	return data[0], data[1], data[2], nil
}
