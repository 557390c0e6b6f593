// Package zapslog sends the records of a zap logger to a slog.Handler, so
// that what etcd's WAL and snapshotter report (a repaired torn tail, a
// broken snapshot file set aside) lands in the daemon's log, formatted
// like every other line.
//
// go.uber.org/zap/exp/zapslog goes the other way (a slog.Handler writing
// to a zap core); nothing in zap itself turns a zap core into slog, hence
// this package.
package zapslog

import (
	"context"
	"log/slog"
	"maps"
	"slices"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// New returns a zap logger whose records go to h.
func New(h slog.Handler) *zap.Logger {
	return zap.New(&core{h: h})
}

// core is a zapcore.Core over a slog.Handler. Fields added by With are
// converted once and kept by the handler (WithAttrs, WithGroup).
type core struct{ h slog.Handler }

// Level maps zap's levels onto slog's. DPanic, Panic and Fatal have no
// slog counterpart: they are errors (zap still panics or exits after the
// write, as it would with any core).
func Level(l zapcore.Level) slog.Level {
	switch {
	case l <= zapcore.DebugLevel:
		return slog.LevelDebug
	case l == zapcore.InfoLevel:
		return slog.LevelInfo
	case l == zapcore.WarnLevel:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func (c *core) Enabled(l zapcore.Level) bool {
	return c.h.Enabled(context.Background(), Level(l))
}

func (c *core) With(fields []zapcore.Field) zapcore.Core {
	h := c.h
	// zap.Namespace nests every field after it, those of later writes
	// too: in slog terms, a group opened on the handler.
	for {
		attrs, ns, rest := splitAtNamespace(fields)
		if len(attrs) > 0 {
			h = h.WithAttrs(attrs)
		}
		if ns == "" {
			return &core{h: h}
		}
		h = h.WithGroup(ns)
		fields = rest
	}
}

func (c *core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	r := slog.NewRecord(e.Time, Level(e.Level), e.Message, 0)
	if e.LoggerName != "" {
		r.AddAttrs(slog.String("logger", e.LoggerName))
	}
	r.AddAttrs(Attrs(fields)...)
	return c.h.Handle(context.Background(), r)
}

// Sync has nothing to flush: the handler writes each record as it gets it.
func (c *core) Sync() error { return nil }

// Attrs converts zap fields to slog attributes, in order. A namespace
// becomes a group holding the fields after it.
func Attrs(fields []zapcore.Field) []slog.Attr {
	attrs, ns, rest := splitAtNamespace(fields)
	if ns != "" {
		attrs = append(attrs, slog.Attr{Key: ns, Value: slog.GroupValue(Attrs(rest)...)})
	}
	return attrs
}

// splitAtNamespace converts the fields before the first namespace and
// returns that namespace's key and the fields after it ("" and nil when
// there is none).
func splitAtNamespace(fields []zapcore.Field) (attrs []slog.Attr, ns string, rest []zapcore.Field) {
	attrs = make([]slog.Attr, 0, len(fields))
	for i, f := range fields {
		if f.Type == zapcore.NamespaceType {
			return attrs, f.Key, fields[i+1:]
		}
		attrs = append(attrs, attrsOf(f)...)
	}
	return attrs, "", nil
}

// attrsOf converts one field. Errors keep their value (the handler calls
// Error) and zap's key "error" becomes the daemon's "err". Every other
// type goes through zap's own map encoder, which knows them all (arrays,
// objects, stringers, reflected values) and turns a panicking String or
// MarshalLogObject into a message instead of a crash.
func attrsOf(f zapcore.Field) []slog.Attr {
	switch f.Type {
	case zapcore.SkipType:
		return nil
	case zapcore.ErrorType:
		if err, ok := f.Interface.(error); ok && err != nil {
			key := f.Key
			if key == "error" {
				key = "err"
			}
			return []slog.Attr{slog.Any(key, err)}
		}
	}
	enc := zapcore.NewMapObjectEncoder()
	f.AddTo(enc)
	// One key as a rule; a field that failed to encode adds a second
	// (KeyError). Sorted, so a line reads the same every time.
	attrs := make([]slog.Attr, 0, len(enc.Fields))
	for _, k := range slices.Sorted(maps.Keys(enc.Fields)) {
		attrs = append(attrs, slog.Any(k, enc.Fields[k]))
	}
	return attrs
}
