package secretinput

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/jaco-project/jaco/manager/backup/backupfile"
)

// A secret piped in or read from a file is taken as the first line, with
// or without its newline, and no prompt is written where no one reads it.
func TestLineFromAPipe(t *testing.T) {
	for in, want := range map[string]string{
		"key\n":           "key",
		"  key  \r\n":     "key",
		"key":             "key",
		"key\nsecond\n":   "key",
		"\nkey on line 2": "",
	} {
		var prompt bytes.Buffer
		got, err := Line(strings.NewReader(in), &prompt, "Key: ")
		if err != nil || got != want {
			t.Errorf("Line(%q) = %q, %v; want %q", in, got, err, want)
		}
		if prompt.Len() != 0 {
			t.Errorf("Line(%q) prompted %q on a pipe", in, prompt.String())
		}
	}
	if _, err := Line(strings.NewReader(""), io.Discard, "Key: "); !errors.Is(err, io.EOF) {
		t.Errorf("Line of nothing: err = %v, want io.EOF", err)
	}
}

func TestBackupKey(t *testing.T) {
	key, err := backupfile.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	got, err := BackupKey(strings.NewReader(key.String()+"\n"), io.Discard)
	if err != nil || got != key {
		t.Errorf("BackupKey of the printed key: %v", err)
	}
	if _, err := BackupKey(strings.NewReader(""), io.Discard); err == nil || !strings.Contains(err.Error(), "no backup key") {
		t.Errorf("BackupKey of nothing: err = %v, want no backup key", err)
	}
	if _, err := BackupKey(strings.NewReader("JACO1-not-a-backup-key\n"), io.Discard); !errors.Is(err, backupfile.ErrBadKey) {
		t.Errorf("BackupKey of a join token: err = %v, want ErrBadKey", err)
	}
}
