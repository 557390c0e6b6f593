package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/jaco-project/jaco/api"
)

func TestParseFileRef(t *testing.T) {
	for in, want := range map[string]*api.FileReference{
		"db-pass":                              {Name: "db-pass"},
		"source=db-pass,target=pw":             {Name: "db-pass", Target: "pw"},
		"src=tls,mode=0440,uid=33,gid=33":      {Name: "tls", Mode: 0o440, Uid: 33, Gid: 33},
		"app.yml,target=/etc/app.yml,mode=444": {Name: "app.yml", Target: "/etc/app.yml", Mode: 0o444},
	} {
		got, err := parseFileRef(in)
		if err != nil || !proto.Equal(got, want) {
			t.Errorf("parseFileRef(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

// --secret-rm drops by name, --secret-add replaces what sits at the same
// target and keeps the rest, ids included (the manager resolves new ones).
func TestEditFileRefs(t *testing.T) {
	refs := []*api.FileReference{
		{Name: "a", Id: "ida", Target: "a", Mode: 0o400},
		{Name: "b", Id: "idb", Target: "b", Mode: 0o400},
		{Name: "c", Id: "idc", Target: "x", Mode: 0o400},
	}
	got, err := editFileRefs(refs, []string{"b"}, []string{"a,mode=0440", "d,target=x"}, "secret-add", secretTarget)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range got {
		names = append(names, r.Name+":"+r.Target+":"+r.Id)
	}
	if s := strings.Join(names, " "); s != "a:: d:x:" {
		t.Errorf("edited references %q, want a (replaced, mode 0440) and d at x", s)
	}
	if got[0].Mode != 0o440 {
		t.Errorf("a's mode %#o, want 0440", got[0].Mode)
	}
}

func TestReadFileArg(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, maxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readFileArg(nil, big); err == nil || !strings.Contains(err.Error(), "the limit") {
		t.Errorf("a file over 500 KiB: %v, want refused", err)
	}
	got, err := readFileArg(strings.NewReader("from stdin"), "-")
	if err != nil || string(got) != "from stdin" {
		t.Errorf("- read %q, %v; want standard input", got, err)
	}
}
