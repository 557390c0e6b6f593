// Package secretinput reads the secrets an operator types (the unlock
// key, a backup key): from the terminal with echo off, or from stdin when
// it is a pipe or a file, never from a flag, which would land in shell
// history and the process list. Both jaco and jacod read them.
package secretinput

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/jaco-project/jaco/manager/backup/backupfile"
)

// Line reads one line, trimmed: from the terminal with echo off, after
// label, when in is one, otherwise from in as it is (a pipe, a file). A
// last line without its newline counts; no line at all is io.EOF.
func Line(in io.Reader, prompt io.Writer, label string) (string, error) {
	if f, ok := in.(*os.File); ok {
		if t, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err == nil {
			fmt.Fprint(prompt, label)
			quiet := *t
			quiet.Lflag &^= unix.ECHO
			if err := unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, &quiet); err == nil {
				defer func() {
					_ = unix.IoctlSetTermios(int(f.Fd()), unix.TCSETS, t)
					fmt.Fprintln(prompt)
				}()
			}
		}
	}
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", err
	}
	return strings.TrimSpace(line), nil
}

// BackupKey reads a backup key (Line): the one jaco backup printed, to
// restore with or to seal another backup with.
func BackupKey(in io.Reader, prompt io.Writer) (backupfile.Key, error) {
	line, err := Line(in, prompt, "Backup key: ")
	if err != nil && !errors.Is(err, io.EOF) {
		return backupfile.Key{}, fmt.Errorf("read backup key: %w", err)
	}
	if line == "" {
		return backupfile.Key{}, errors.New("no backup key on stdin (give the key printed by jaco backup)")
	}
	return backupfile.ParseKey(line)
}
