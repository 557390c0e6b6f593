package ca

import cfssllog "github.com/cloudflare/cfssl/log"

// cfssl logs every key generation and signature at info level through its own
// global logger. Only fatal messages (which also exit) are let through. The
// level is a plain variable, so it is set once here, before any cfssl call.
func init() {
	cfssllog.Level = cfssllog.LevelFatal
}
