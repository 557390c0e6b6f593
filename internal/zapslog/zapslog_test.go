package zapslog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/jaco-project/jaco/internal/zapslog"
)

// jsonLines logs through a zap logger over a JSON handler at level and
// returns the records written.
func jsonLines(t *testing.T, level slog.Level, log func(*zap.Logger)) []map[string]any {
	t.Helper()
	var buf bytes.Buffer
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: level})
	log(zapslog.New(h))
	var recs []map[string]any
	for line := range strings.Lines(buf.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	return recs
}

func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		zap  zapcore.Level
		slog slog.Level
	}{
		{zapcore.DebugLevel, slog.LevelDebug},
		{zapcore.InfoLevel, slog.LevelInfo},
		{zapcore.WarnLevel, slog.LevelWarn},
		{zapcore.ErrorLevel, slog.LevelError},
		{zapcore.DPanicLevel, slog.LevelError},
		{zapcore.PanicLevel, slog.LevelError},
		{zapcore.FatalLevel, slog.LevelError},
	} {
		if got := zapslog.Level(tc.zap); got != tc.slog {
			t.Errorf("Level(%v) = %v, want %v", tc.zap, got, tc.slog)
		}
	}
	// The handler's level decides what zap even builds.
	recs := jsonLines(t, slog.LevelWarn, func(l *zap.Logger) {
		l.Debug("d")
		l.Info("i")
		l.Warn("w")
		l.Error("e")
	})
	var got []string
	for _, r := range recs {
		got = append(got, r["level"].(string)+" "+r["msg"].(string))
	}
	if strings.Join(got, ",") != "WARN w,ERROR e" {
		t.Errorf("records = %q, want WARN w and ERROR e only", got)
	}
}

func TestFields(t *testing.T) {
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	recs := jsonLines(t, slog.LevelDebug, func(l *zap.Logger) {
		l.With(zap.String("component", "wal")).Named("etcd").Info("repaired",
			zap.String("path", "/d/0.wal"),
			zap.Int64("offset", 42),
			zap.Uint64("index", 7),
			zap.Bool("ok", true),
			zap.Duration("took", 1500*time.Millisecond),
			zap.Time("at", when),
			zap.Error(errors.New("unexpected EOF")),
			zap.NamedError("cause", errors.New("short write")),
			zap.Strings("files", []string{"a", "b"}),
			zap.Error(nil), // zap skips it
			zap.Namespace("detail"),
			zap.Int("size", 3),
		)
	})
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	r := recs[0]
	want := map[string]any{
		"level": "INFO", "msg": "repaired", "component": "wal", "logger": "etcd",
		"path": "/d/0.wal", "offset": 42.0, "index": 7.0, "ok": true,
		"took": float64(1500 * time.Millisecond), "at": "2026-01-02T03:04:05Z",
		"err": "unexpected EOF", "cause": "short write",
	}
	for k, v := range want {
		if r[k] != v {
			t.Errorf("%s = %#v, want %#v", k, r[k], v)
		}
	}
	if files, _ := r["files"].([]any); len(files) != 2 || files[0] != "a" || files[1] != "b" {
		t.Errorf("files = %#v, want [a b]", r["files"])
	}
	if d, _ := r["detail"].(map[string]any); d["size"] != 3.0 {
		t.Errorf("detail = %#v, want the fields after the namespace nested", r["detail"])
	}
	if _, ok := r["error"]; ok {
		t.Error(`zap's "error" key is kept beside "err"`)
	}
}

// A namespace added by With nests the fields of later writes, as zap does.
func TestWithNamespace(t *testing.T) {
	recs := jsonLines(t, slog.LevelInfo, func(l *zap.Logger) {
		l.With(zap.String("a", "1"), zap.Namespace("ns"), zap.String("b", "2")).Info("m", zap.String("c", "3"))
	})
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	ns, _ := recs[0]["ns"].(map[string]any)
	if recs[0]["a"] != "1" || ns["b"] != "2" || ns["c"] != "3" {
		t.Errorf("record = %v, want a at the top and b, c under ns", recs[0])
	}
}

// A field whose encoding fails still yields a line, with zap's message
// for the failure.
func TestBrokenField(t *testing.T) {
	recs := jsonLines(t, slog.LevelInfo, func(l *zap.Logger) {
		l.Info("m", zap.Stringer("who", panicky{}))
	})
	if len(recs) != 1 || !strings.Contains(recs[0]["whoError"].(string), "PANIC") {
		t.Errorf("records = %v, want one with whoError", recs)
	}
}

type panicky struct{}

func (panicky) String() string { panic("no name") }
