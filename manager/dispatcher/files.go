package dispatcher

import (
	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/manager/state/store"
)

// maxFileBytes bounds the secrets and configs of one assignments message
// (the files of one task may pass it alone): with paging.MaxBytes of
// tasks, a message stays below gRPC's 4 MiB limit.
const maxFileBytes = 2 * paging.MaxBytes

// files are the secrets and configs a part of an assignments message's
// tasks references, each whole and once, in the order first referenced.
type files struct {
	secrets []*api.Secret
	configs []*api.Config
	seen    map[string]bool // "s"+id, "c"+id
	bytes   int
}

// withFiles cuts a run of tasks into parts whose files stay within
// maxFileBytes (one task at least per part) and gives each part the
// files its tasks reference, read from st in one view. A node thus gets
// a secret only with a task of its own that references it.
func withFiles(st *store.Store, run []*api.Task) (parts [][]*api.Task, fs []files) {
	st.View(func(tx store.ReadTx) { parts, fs = splitFiles(tx, run, maxFileBytes) })
	return parts, fs
}

func splitFiles(tx store.ReadTx, run []*api.Task, limit int) (parts [][]*api.Task, fs []files) {
	cur := files{seen: map[string]bool{}}
	start := 0
	for i, t := range run {
		add := cur.missing(tx, t)
		if i > start && cur.bytes+add.bytes > limit {
			parts, fs = append(parts, run[start:i]), append(fs, cur)
			cur, start = files{seen: map[string]bool{}}, i
			add = cur.missing(tx, t)
		}
		cur.merge(add)
	}
	return append(parts, run[start:]), append(fs, cur)
}

// missing returns the files t references that f lacks, by the ids the
// manager filled in when it accepted the spec. A reference to a file no
// longer stored is skipped: only a replica whose service is gone can name
// one (a file is not removed while a spec references it), and it is being
// stopped.
func (f *files) missing(tx store.ReadTx, t *api.Task) files {
	add := files{seen: map[string]bool{}}
	for _, r := range t.GetSpec().GetSecrets() {
		key := "s" + r.GetId()
		if f.seen[key] || add.seen[key] {
			continue
		}
		add.seen[key] = true
		if s := tx.GetSecret(r.GetId()); s != nil {
			add.secrets = append(add.secrets, s)
			add.bytes += proto.Size(s)
		}
	}
	for _, r := range t.GetSpec().GetConfigs() {
		key := "c" + r.GetId()
		if f.seen[key] || add.seen[key] {
			continue
		}
		add.seen[key] = true
		if c := tx.GetConfig(r.GetId()); c != nil {
			add.configs = append(add.configs, c)
			add.bytes += proto.Size(c)
		}
	}
	return add
}

func (f *files) merge(add files) {
	f.secrets = append(f.secrets, add.secrets...)
	f.configs = append(f.configs, add.configs...)
	f.bytes += add.bytes
	for k := range add.seen {
		f.seen[k] = true
	}
}
