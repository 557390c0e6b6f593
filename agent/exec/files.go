package exec

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"strings"

	"github.com/jaco-project/jaco/api"
)

// Where replicas find their secrets and configs, and their defaults
// (ServiceSpec.secrets and configs).
const (
	// SecretsDir is where a container sees its secrets: a secret's
	// relative target is a file name below it.
	SecretsDir = "/run/secrets"
	// EnvSecretsDir and EnvConfigsDir name, for hook replicas, the
	// directories of the replica's tmpfs holding its secrets (at their
	// targets below SecretsDir, relative) and its configs (at their
	// absolute targets, below the directory).
	EnvSecretsDir = "JACO_SECRETS_DIR"
	EnvConfigsDir = "JACO_CONFIGS_DIR"

	DefaultSecretMode fs.FileMode = 0o444
	DefaultConfigMode fs.FileMode = 0o444
)

// File is one secret or config a replica gets as a file. Data is held in
// memory only: runtimes write it to a tmpfs of the replica, never to a
// disk, and nothing logs it (String and LogValue leave it out).
type File struct {
	// Secret tells a secret from a config.
	Secret bool
	// Name and ID are the secret's (config's).
	Name, ID string
	// Path is the absolute path a container sees it at: SecretsDir/TARGET
	// for a secret with a relative target, else the target.
	Path     string
	Mode     fs.FileMode
	UID, GID uint32
	Data     []byte
}

func (f File) kind() string {
	if f.Secret {
		return "secret"
	}
	return "config"
}

// String names the file without its content.
func (f File) String() string {
	return fmt.Sprintf("%s %s at %s (%d bytes, mode %#o, uid %d, gid %d)", f.kind(), f.Name, f.Path, len(f.Data), f.Mode, f.UID, f.GID)
}

// GoString keeps %#v from printing the content too.
func (f File) GoString() string { return "exec.File{" + f.String() + "}" }

// LogValue implements slog.LogValuer: never the content.
func (f File) LogValue() slog.Value {
	return slog.GroupValue(slog.String("kind", f.kind()), slog.String("name", f.Name), slog.String("path", f.Path), slog.Int("bytes", len(f.Data)))
}

// Rel is the file's path in its kind's directory of a replica's tmpfs:
// a secret's below SecretsDir relative to it (one with an absolute target
// elsewhere: that path without its leading slash), a config's target
// without its leading slash.
func (f File) Rel() string {
	if rel, ok := strings.CutPrefix(f.Path, SecretsDir+"/"); ok && f.Secret {
		return rel
	}
	return strings.TrimPrefix(f.Path, "/")
}

// MissingFileError is a secret or config the replica's spec names that
// did not reach this node with the replica's assignment.
type MissingFileError struct {
	Secret bool
	Name   string
}

func (e *MissingFileError) Error() string {
	kind := "config"
	if e.Secret {
		kind = "secret"
	}
	return fmt.Sprintf("%s %q did not reach this node", kind, e.Name)
}

// FileLookup returns what a reference names, or false when the node does
// not hold it.
type FileLookup func(ref *api.FileReference) (*api.FileSpec, bool)

// ResolveFiles turns the spec's references into Files, defaults filled
// in (a secret at SecretsDir/NAME with mode 0444, a config at /NAME with
// mode 0444). A reference lookup cannot find is left out: the runtime's
// Prepare refuses the replica (Replica.CheckFiles). A target that is not
// a plain path, or two files at one path, is an error.
func ResolveFiles(spec *api.ServiceSpec, secret, config FileLookup) ([]File, error) {
	var out []File
	seen := map[string]bool{}
	add := func(ref *api.FileReference, isSecret bool, lookup FileLookup) error {
		f, err := fileFor(ref, isSecret)
		if err != nil {
			return err
		}
		if seen[f.Path] {
			return fmt.Errorf("%s %s: two files at %s", f.kind(), f.Name, f.Path)
		}
		seen[f.Path] = true
		if content, ok := lookup(ref); ok {
			f.Data = content.GetData()
			out = append(out, f)
		}
		return nil
	}
	for _, ref := range spec.GetSecrets() {
		if err := add(ref, true, secret); err != nil {
			return nil, err
		}
	}
	for _, ref := range spec.GetConfigs() {
		if err := add(ref, false, config); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fileFor is ref with its defaults, without content.
func fileFor(ref *api.FileReference, isSecret bool) (File, error) {
	f := File{Secret: isSecret, Name: ref.GetName(), ID: ref.GetId(), Mode: fs.FileMode(ref.GetMode()) & fs.ModePerm, UID: ref.GetUid(), GID: ref.GetGid()}
	target := ref.GetTarget()
	if target == "" {
		target = ref.GetName()
	}
	if f.Mode == 0 {
		f.Mode = DefaultConfigMode
		if isSecret {
			f.Mode = DefaultSecretMode
		}
	}
	switch {
	case strings.HasPrefix(target, "/"):
		f.Path = target
	case isSecret:
		f.Path = SecretsDir + "/" + target
	default:
		f.Path = "/" + target
	}
	if err := checkPath(f.Path); err != nil {
		return File{}, fmt.Errorf("%s %s: target %q: %w", f.kind(), f.Name, target, err)
	}
	return f, nil
}

var errBadPath = errors.New("not a plain file path")

// checkPath refuses what could write outside the replica's files or over
// a directory: "..", ".", empty elements, NUL, the root or SecretsDir.
func checkPath(p string) error {
	if strings.ContainsRune(p, 0) || p == "/" || p == SecretsDir || path.Clean(p) != p {
		return errBadPath
	}
	for _, elem := range strings.Split(p[1:], "/") {
		if elem == "" || elem == "." || elem == ".." {
			return errBadPath
		}
	}
	return nil
}

// CheckFiles returns a *MissingFileError for the first secret or config
// the replica's spec names and Files lacks. Runtimes call it first thing
// in Prepare.
func (r Replica) CheckFiles() error {
	have := map[string]bool{}
	for _, f := range r.Files {
		have[f.kind()+"\x00"+f.Name] = true
	}
	spec := r.Task.GetSpec()
	for _, ref := range spec.GetSecrets() {
		if !have["secret\x00"+ref.GetName()] {
			return &MissingFileError{Secret: true, Name: ref.GetName()}
		}
	}
	for _, ref := range spec.GetConfigs() {
		if !have["config\x00"+ref.GetName()] {
			return &MissingFileError{Name: ref.GetName()}
		}
	}
	return nil
}
