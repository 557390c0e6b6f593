package volumes

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/durable"
)

// A volume's moves (docs/adr/0064-volume-move.md). Each copy a move makes
// is a new generation of the volume, recorded beside its id:
//
//	<dir>/<name>/generation  the copy's generation (none: 0, never moved)
//	<dir>/<name>/moving      while the copy is received: its resume point
//
// so that the removal of the old node's copy (a VolumeRef of its
// generation) never deletes a newer copy of the same volume.

const (
	generationFile = "generation"
	movingFile     = "moving"
)

// generation is the generation of the copy at root (0 without the file).
func generation(root string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(root, generationFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	g, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", filepath.Join(root, generationFile), err)
	}
	return g, nil
}

// readID is the id of the volume whose data root holds (its id file).
func readID(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, idFile))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// SendPath is the data of volume name to send for a move: this node's
// complete copy of volume id at generation gen.
func (d Dir) SendPath(name, id string, gen uint64) (string, error) {
	if d == "" {
		return "", errors.New("this node has no volumes dir (jacod --volumes-dir)")
	}
	if err := checkName(name); err != nil {
		return "", err
	}
	root := filepath.Join(string(d), name)
	got, err := readID(root)
	if err != nil {
		return "", fmt.Errorf("volume %s: %w", name, err)
	}
	if got != id {
		return "", fmt.Errorf("volume %s: this node holds another volume of that name (id %s, not %s)", name, got, id)
	}
	if _, err := os.Lstat(filepath.Join(root, movingFile)); err == nil {
		return "", fmt.Errorf("volume %s: this node's copy is itself incomplete", name)
	}
	if g, err := generation(root); err != nil || g != gen {
		return "", fmt.Errorf("volume %s: this node holds generation %d, not %d (%v)", name, g, gen, err)
	}
	return filepath.Join(root, dataDir), nil
}

// Receiving is where volume name (id, driver options opts) is received as
// generation gen: its _data and the resume point's file. done: the copy is
// here already, complete (a report of it was lost). A directory of
// another volume, or a complete copy of another generation, is refused.
func (d Dir) Receiving(name, id string, gen uint64, opts map[string]string) (data, state string, done bool, err error) {
	if d == "" {
		return "", "", false, errors.New("this node has no volumes dir (jacod --volumes-dir)")
	}
	if err := checkName(name); err != nil {
		return "", "", false, err
	}
	if opts[api.VolumeOptType] == api.VolumeTypeNone {
		return "", "", false, fmt.Errorf("volume %s binds a path of its node (type=none): it does not move", name)
	}
	root := filepath.Join(string(d), name)
	state = filepath.Join(root, movingFile)
	data = filepath.Join(root, dataDir)
	if _, err := os.Lstat(root); err == nil {
		got, err := readID(root)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", "", false, fmt.Errorf("volume %s: %w", name, err)
		}
		if err == nil && got != id {
			return "", "", false, fmt.Errorf("volume %s: %s holds another volume of that name (id %s): move it away to receive %s", name, root, got, id)
		}
		g, err := generation(root)
		if err != nil {
			return "", "", false, fmt.Errorf("volume %s: %w", name, err)
		}
		_, serr := os.Lstat(state)
		switch {
		case g == gen && serr != nil:
			return data, state, true, nil
		case serr != nil && got == id:
			return "", "", false, fmt.Errorf("volume %s: %s holds this volume's generation %d, which was not deleted yet: delete it to receive generation %d", name, root, g, gen)
		}
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return "", "", false, fmt.Errorf("volume %s: %w", name, err)
	}
	// The marker before the id: a directory with an id and no marker is a
	// complete copy.
	if _, err := os.Lstat(state); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(state, nil, 0o600); err != nil {
			return "", "", false, fmt.Errorf("volume %s: %w", name, err)
		}
	}
	if err := claim(root, name, id); err != nil {
		return "", "", false, err
	}
	if err := os.Mkdir(data, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", "", false, fmt.Errorf("volume %s: %w", name, err)
	}
	if opts[api.VolumeOptType] == api.VolumeTypeTmpfs {
		if err := mountTmpfs(data, opts[api.VolumeOptO]); err != nil {
			return "", "", false, fmt.Errorf("volume %s: %w", name, err)
		}
	}
	return data, state, false, nil
}

// Received records volume name's copy as complete, of generation gen:
// the generation, synced, then the marker gone.
func (d Dir) Received(name string, gen uint64) error {
	root := filepath.Join(string(d), name)
	if err := os.WriteFile(filepath.Join(root, generationFile), []byte(strconv.FormatUint(gen, 10)+"\n"), 0o600); err != nil {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	if err := durable.SyncFS(root); err != nil {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	if err := os.Remove(filepath.Join(root, movingFile)); err != nil {
		return fmt.Errorf("volume %s: %w", name, err)
	}
	return syncDir(root)
}
