package logs

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of a Store's bounds.
const (
	// DefaultKeep matches the orchestrator's history: it keeps at least
	// five ended tasks per slot in the store (manager/orchestrator), so the
	// replicas `service logs` asks for still have their logs.
	DefaultKeep = 5
	// DefaultMaxKept bounds the ended replicas' logs a node keeps in all:
	// the slots of removed services are never emptied by newer replicas.
	DefaultMaxKept = 250
	// DefaultMaxFile is the size past which a kept log is rotated; a
	// replica's log takes at most twice this.
	DefaultMaxFile = 5 << 20
	// DefaultMaxLine is the longest line kept whole: a longer one is cut
	// (CutMarker), so a line never nears gRPC's message size limit.
	DefaultMaxLine = 16 << 10
)

// Store is the logs directory of an agent: raw files written by runtimes,
// kept logs under kept/, and under ended/ a record per ended replica
// whose log is kept: ended/SERVICE.SLOT/STAMP-ID, oldest first by name.
type Store struct {
	dir string

	// The bounds; zero means the default.
	Keep    int
	MaxKept int
	MaxFile int64
	MaxLine int
	// Poll is how often a collector looks for new output (DefaultPoll
	// when 0).
	Poll time.Duration
	// Now is the clock lines are stamped with (time.Now when nil).
	Now    func() time.Time
	Logger *slog.Logger

	mu sync.Mutex // one Retire at a time
}

// NewStore is the store of the logs directory dir.
func NewStore(dir string) *Store { return &Store{dir: dir} }

// RawPath is the file a runtime appends replica id's output to.
func (s *Store) RawPath(id string) string { return filepath.Join(s.dir, id+".log") }

// Path is replica id's kept log (its older part is Path+".1").
func (s *Store) Path(id string) string { return filepath.Join(s.keptDir(), id+".log") }

func (s *Store) keptDir() string  { return filepath.Join(s.dir, "kept") }
func (s *Store) endedDir() string { return filepath.Join(s.dir, "ended") }

func (s *Store) poll() time.Duration { return cmpOr(s.Poll, DefaultPoll) }
func (s *Store) maxFile() int64      { return cmpOr(s.MaxFile, DefaultMaxFile) }
func (s *Store) maxLine() int        { return cmpOr(s.MaxLine, DefaultMaxLine) }
func (s *Store) keep() int           { return cmpOr(s.Keep, DefaultKeep) }
func (s *Store) maxKept() int        { return cmpOr(s.MaxKept, DefaultMaxKept) }
func cmpOr[T int | int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Store) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Retire records that replica id, of serviceID's slot (0 for a global
// service's replica: one per node), is gone from the node, and deletes
// the kept logs of the oldest ended replicas beyond Keep in that slot and
// beyond MaxKept on the node. A replica that left no log is not recorded.
func (s *Store) Retire(id, serviceID string, slot uint64) error {
	if !plainName(id) {
		return fmt.Errorf("retire log: task id %q is not a plain name", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(s.Path(id)); errors.Is(err, fs.ErrNotExist) {
		return s.drop(id, "")
	}
	key := "unknown.0"
	if plainName(serviceID) {
		key = serviceID + "." + strconv.FormatUint(slot, 10)
	}
	dir := filepath.Join(s.endedDir(), key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("retire log of %s: %w", id, err)
	}
	// A fixed-width stamp sorts ended replicas by name.
	name := fmt.Sprintf("%020d-%s", s.now().UnixNano(), id)
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o640); err != nil {
		return fmt.Errorf("retire log of %s: %w", id, err)
	}
	return s.prune()
}

// ended is one record under ended/.
type ended struct{ key, name string }

func (e ended) id() string {
	_, id, _ := strings.Cut(e.name, "-")
	return id
}

// prune deletes the oldest ended replicas' logs beyond the bounds.
func (s *Store) prune() error {
	keys, err := os.ReadDir(s.endedDir())
	if err != nil {
		return fmt.Errorf("list ended replicas: %w", err)
	}
	var all []ended
	var errs []error
	for _, k := range keys {
		names, err := os.ReadDir(filepath.Join(s.endedDir(), k.Name()))
		if err != nil {
			errs = append(errs, fmt.Errorf("list ended replicas: %w", err))
			continue
		}
		// ReadDir sorts by name: oldest first.
		for i, n := range names {
			e := ended{k.Name(), n.Name()}
			if i < len(names)-s.keep() {
				errs = append(errs, s.drop(e.id(), filepath.Join(k.Name(), e.name)))
				continue
			}
			all = append(all, e)
		}
	}
	if extra := len(all) - s.maxKept(); extra > 0 {
		slices.SortFunc(all, func(a, b ended) int { return strings.Compare(a.name, b.name) })
		for _, e := range all[:extra] {
			errs = append(errs, s.drop(e.id(), filepath.Join(e.key, e.name)))
		}
	}
	// Slots left without records (their replicas all dropped) go too;
	// Remove refuses a directory that is not empty.
	for _, k := range keys {
		_ = os.Remove(filepath.Join(s.endedDir(), k.Name()))
	}
	return errors.Join(errs...)
}

// drop deletes replica id's kept log and its record (rel, under ended/;
// none when empty).
func (s *Store) drop(id, rel string) error {
	paths := []string{s.Path(id), s.Path(id) + ".1", s.Path(id) + ".offset"}
	if rel != "" {
		paths = append(paths, filepath.Join(s.endedDir(), rel))
	}
	var errs []error
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("delete ended replica's log: %w", err))
		}
	}
	return errors.Join(errs...)
}

func plainName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`)
}
