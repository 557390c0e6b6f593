package main

import (
	"bytes"
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/jaco-project/jaco/api"
)

// TestCopyLogs: replica lines are named NAME.SLOT@NODE (NAME@NODE for a
// global replica, the short id when the manager named none), stamped
// with --timestamps; the manager's own notes go to stderr.
func TestCopyLogs(t *testing.T) {
	at := time.Date(2026, 11, 25, 6, 0, 0, 500, time.UTC)
	msgs := []*api.LogsMessage{{Lines: []*api.LogLine{
		{TaskId: "abcdefabcdefabcdef", ServiceName: "web", Slot: 2, NodeName: "w1", Data: []byte("hello\n"), Time: timestamppb.New(at)},
		{TaskId: "x1", ServiceName: "agent", NodeName: "w2", Data: []byte("global")},
		{TaskId: "abcdefabcdefabcdef", NodeId: "n1", Data: []byte("unnamed\n")},
		{Stream: "stderr", Data: []byte("jaco: logs from 198.18.0.2:7000: unavailable")},
	}}}
	recv := func() (*api.LogsMessage, error) {
		if len(msgs) == 0 {
			return nil, io.EOF
		}
		m := msgs[0]
		msgs = msgs[1:]
		return m, nil
	}
	var out, errOut bytes.Buffer
	if err := copyLogs(&out, &errOut, true, recv); err != nil {
		t.Fatal(err)
	}
	want := "2026-11-25T06:00:00.0000005Z web.2@w1 | hello\n" +
		"agent@w2 | global\n" +
		"abcdefabcdef@n1 | unnamed\n"
	if out.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), want)
	}
	if want := "jaco: logs from 198.18.0.2:7000: unavailable\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
}

func TestSinceValue(t *testing.T) {
	var v sinceValue
	before := time.Now()
	if err := v.Set("10m"); err != nil || v.t.After(before.Add(-10*time.Minute+time.Second)) || v.t.Before(before.Add(-11*time.Minute)) {
		t.Errorf("10m: %v, %v; want ten minutes ago", v.t, err)
	}
	if err := v.Set("2026-11-25T06:00:00Z"); err != nil || !v.t.Equal(time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)) {
		t.Errorf("RFC 3339: %v, %v", v.t, err)
	}
	for _, bad := range []string{"yesterday", "-5m", ""} {
		if err := v.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
