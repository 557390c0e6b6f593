package hooks

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// A replica that runs as another user than root must reach what lives in
// its Dir: its hooks (Dir/bundle, 0755), its secrets and configs (the
// tmpfs at Dir/files, mounted 0700; each file has its own owner and mode)
// and its notify socket. Dir and the directories above it are jacod's,
// 0700 (the data dir holds keys): opening them to every user would
// expose whatever they hold. So each directory on the way that the user
// may not search gets a POSIX ACL entry that lets that one uid search it
// (u:UID:--x), nothing more: it may not list them, and reads only what
// the mode of a file below grants it (docs/design.md §9). The entries
// stay when the replica goes: they grant no more than a path, and other
// replicas of the same user use them.

// POSIX ACL as the kernel stores it in the system.posix_acl_access
// attribute (linux/posix_acl_xattr.h): a version, then entries of tag,
// permissions and id, sorted by tag, then id.
const (
	aclXattr       = "system.posix_acl_access"
	aclVersion     = 2
	aclUserObj     = 0x01
	aclUser        = 0x02
	aclGroupObj    = 0x04
	aclGroup       = 0x08
	aclMask        = 0x10
	aclOther       = 0x20
	aclUndefinedID = 0xffffffff
	aclSearch      = 1 // x
)

type aclEntry struct {
	tag, perm uint16
	id        uint32
}

// grantSearch lets cred's user search dir and every directory above it.
func grantSearch(dir string, cred *credential) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("open %s to uid %d: %w", dir, cred.UID, err)
	}
	for d := abs; ; d = filepath.Dir(d) {
		if err := grantSearchOne(d, cred); err != nil {
			return fmt.Errorf("open %s to uid %d: %w", abs, cred.UID, err)
		}
		if d == "/" {
			return nil
		}
	}
}

func grantSearchOne(dir string, cred *credential) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	if searchable(&st, cred) {
		return nil
	}
	acl, err := readACL(dir, st.Mode)
	if err != nil {
		return err
	}
	changed := false
	i := slices.IndexFunc(acl, func(e aclEntry) bool { return e.tag == aclUser && e.id == cred.UID })
	if i < 0 {
		acl = append(acl, aclEntry{tag: aclUser, perm: aclSearch, id: cred.UID})
		changed = true
	} else if acl[i].perm&aclSearch == 0 {
		acl[i].perm |= aclSearch
		changed = true
	}
	// The mask bounds every named entry: it must let search through.
	if i := slices.IndexFunc(acl, func(e aclEntry) bool { return e.tag == aclMask }); i >= 0 {
		if acl[i].perm&aclSearch == 0 {
			acl[i].perm |= aclSearch
			changed = true
		}
	} else {
		var mask uint16
		for _, e := range acl {
			if e.tag == aclGroupObj || e.tag == aclUser || e.tag == aclGroup {
				mask |= e.perm
			}
		}
		acl = append(acl, aclEntry{tag: aclMask, perm: mask, id: aclUndefinedID})
		changed = true
	}
	if !changed {
		return nil
	}
	slices.SortFunc(acl, func(a, b aclEntry) int {
		if a.tag != b.tag {
			return cmp.Compare(a.tag, b.tag)
		}
		return cmp.Compare(a.id, b.id)
	})
	if err := unix.Setxattr(dir, aclXattr, encodeACL(acl), 0); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("%s: its file system keeps no ACLs: make it searchable by the user (chmod o+x) or run the replica as root", dir)
		}
		return &fs.PathError{Op: "set ACL of", Path: dir, Err: err}
	}
	return nil
}

// searchable reports whether mode bits alone let cred search a directory
// (owner, then group, then others, as the kernel checks).
func searchable(st *unix.Stat_t, cred *credential) bool {
	switch {
	case st.Uid == cred.UID:
		return st.Mode&0o100 != 0
	case st.Gid == cred.GID || slices.Contains(cred.Groups, st.Gid):
		return st.Mode&0o010 != 0
	}
	return st.Mode&0o001 != 0
}

// readACL returns dir's access ACL, or the one its mode stands for when
// it has none.
func readACL(dir string, mode uint32) ([]aclEntry, error) {
	var buf []byte
	n, err := unix.Getxattr(dir, aclXattr, nil) // its size
	if err == nil {
		buf = make([]byte, n)
		n, err = unix.Getxattr(dir, aclXattr, buf)
	}
	if errors.Is(err, unix.ENODATA) {
		return []aclEntry{
			{tag: aclUserObj, perm: uint16(mode>>6) & 7, id: aclUndefinedID},
			{tag: aclGroupObj, perm: uint16(mode>>3) & 7, id: aclUndefinedID},
			{tag: aclOther, perm: uint16(mode) & 7, id: aclUndefinedID},
		}, nil
	}
	if err != nil {
		return nil, &fs.PathError{Op: "read ACL of", Path: dir, Err: err}
	}
	buf = buf[:n]
	if len(buf) < 4 || (len(buf)-4)%8 != 0 || binary.LittleEndian.Uint32(buf) != aclVersion {
		return nil, fmt.Errorf("read ACL of %s: unknown format (%d bytes)", dir, len(buf))
	}
	var acl []aclEntry
	for b := buf[4:]; len(b) > 0; b = b[8:] {
		acl = append(acl, aclEntry{
			tag:  binary.LittleEndian.Uint16(b),
			perm: binary.LittleEndian.Uint16(b[2:]),
			id:   binary.LittleEndian.Uint32(b[4:]),
		})
	}
	return acl, nil
}

func encodeACL(acl []aclEntry) []byte {
	b := binary.LittleEndian.AppendUint32(nil, aclVersion)
	for _, e := range acl {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}
