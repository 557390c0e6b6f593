package agent

import (
	"context"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/api"
)

// fileStore keeps the secrets and configs the dispatcher sends with
// assignments (AssignmentsMessage.secrets and configs), in memory only:
// never in the agent db or any other file, never logged. The runners
// hand them to their runtimes as exec.Files; one goes from here as soon
// as no replica this agent still runs names it. Guarded by worker.mu.
type fileStore struct {
	secrets, configs map[string]*api.FileSpec // by id
}

func newFileStore() fileStore {
	return fileStore{secrets: map[string]*api.FileSpec{}, configs: map[string]*api.FileSpec{}}
}

// add keeps what m carries (a newer copy of one already kept replaces it).
func (s *fileStore) add(m *api.AssignmentsMessage) {
	for _, sec := range m.GetSecrets() {
		s.secrets[sec.GetId()] = sec.GetSpec()
	}
	for _, c := range m.GetConfigs() {
		s.configs[c.GetId()] = c.GetSpec()
	}
}

// lookup finds what ref names in kept: by id, or by name for a reference
// the manager gave no id.
func lookup(kept map[string]*api.FileSpec) exec.FileLookup {
	return func(ref *api.FileReference) (*api.FileSpec, bool) {
		if ref.GetId() != "" {
			spec, ok := kept[ref.GetId()]
			return spec, ok
		}
		for _, spec := range kept {
			if spec.GetName() == ref.GetName() {
				return spec, true
			}
		}
		return nil, false
	}
}

// resolve returns the files spec names, with the content this agent holds
// (exec.ResolveFiles: a missing one is left out for Prepare to refuse).
func (s *fileStore) resolve(spec *api.ServiceSpec) ([]exec.File, error) {
	return exec.ResolveFiles(spec, lookup(s.secrets), lookup(s.configs))
}

// keepOnly forgets every secret and config none of specs names.
func (s *fileStore) keepOnly(specs []*api.ServiceSpec) {
	for _, kind := range []struct {
		kept map[string]*api.FileSpec
		refs func(*api.ServiceSpec) []*api.FileReference
	}{
		{s.secrets, (*api.ServiceSpec).GetSecrets},
		{s.configs, (*api.ServiceSpec).GetConfigs},
	} {
		ids, names := map[string]bool{}, map[string]bool{}
		for _, spec := range specs {
			for _, ref := range kind.refs(spec) {
				if ref.GetId() != "" {
					ids[ref.GetId()] = true
				} else {
					names[ref.GetName()] = true
				}
			}
		}
		for id, spec := range kind.kept {
			if !ids[id] && !names[spec.GetName()] {
				delete(kind.kept, id)
			}
		}
	}
}

// forgetUnusedFilesLocked drops the secrets and configs no runner that
// still has its replica to run names (one being removed needs none).
func (w *worker) forgetUnusedFilesLocked() {
	var specs []*api.ServiceSpec
	for _, r := range w.runners {
		r.mu.Lock()
		if !r.removing {
			specs = append(specs, r.task.GetSpec())
		}
		r.mu.Unlock()
	}
	w.files.keepOnly(specs)
}

// replicaFiles are the files of spec with their content.
func (w *worker) replicaFiles(spec *api.ServiceSpec) ([]exec.File, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.files.resolve(spec)
}

// awaitFiles holds a runner whose replica is yet to prepare and names
// secrets or configs until the first assignments of this agent's life
// came: after a restart the db gives the tasks back, but their files come
// only with assignments.
func (r *taskRunner) awaitFiles(ctx context.Context) {
	spec := r.snapshot().GetSpec()
	if len(spec.GetSecrets())+len(spec.GetConfigs()) == 0 || r.state() >= api.TaskState_TASK_STATE_STARTING {
		return
	}
	select {
	case <-r.w.heard:
	case <-r.stopWanted:
	case <-ctx.Done():
	}
}
