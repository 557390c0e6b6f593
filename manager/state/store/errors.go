package store

import "errors"

// The sentinels below are why a write was refused. Errors returned by Apply,
// Restore and the Tx methods wrap exactly one of them (test with errors.Is)
// together with the action, table and id concerned. The API edge maps them to
// reason words; ErrVersionConflict becomes reason.VersionConflict.
var (
	// ErrNotFound: an update or delete named an object that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists: a create reused an id, or a write took a value of a unique
	// index (node hostname, service name) that another object holds.
	ErrExists = errors.New("already exists")
	// ErrVersionConflict: an update or delete carried a meta.version other
	// than the stored one; the object changed since the proposer read it.
	ErrVersionConflict = errors.New("version conflict")
	// ErrInvalid: an action with no kind, no target, an empty id, or an
	// object of a type the store does not keep.
	ErrInvalid = errors.New("invalid action")
)
