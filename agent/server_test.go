package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/agent/logs"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/waitfor"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// serveAgent serves s on a loopback port and returns a client for it.
func serveAgent(t *testing.T, s *Server) api.AgentServiceClient {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	api.RegisterAgentServiceServer(srv, s)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(l)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return api.NewAgentServiceClient(conn)
}

// writeLog appends content's lines to replica id's kept log as its
// collector would, stamped with the time now.
func writeLog(t *testing.T, dir, id, content string) {
	t.Helper()
	path := logs.NewStore(filepath.Join(dir, "logs")).Path(id)
	stamp := time.Now().UTC().Format(time.RFC3339Nano) + " "
	content = stamp + strings.ReplaceAll(strings.TrimSuffix(content, "\n"), "\n", "\n"+stamp) + "\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
}

// logLines collects the lines a Logs stream delivers.
type logLines struct {
	mu    sync.Mutex
	lines []string // "task: data"
}

func (l *logLines) collect(t *testing.T, stream grpc.ServerStreamingClient[api.LogsMessage]) error {
	for {
		m, err := stream.Recv()
		if err != nil {
			return err
		}
		l.mu.Lock()
		for _, line := range m.GetLines() {
			if line.GetNodeId() != "node-1" || line.GetStream() != "stdout" {
				t.Errorf("line %v: want node node-1, stream stdout", line)
			}
			l.lines = append(l.lines, line.GetTaskId()+": "+string(line.GetData()))
		}
		l.mu.Unlock()
	}
}

func (l *logLines) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

func TestLogsTail(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, "t1", "a\nb\nc\n")
	writeLog(t, dir, "t2", "x\ny\n")
	client := serveAgent(t, NewServer("node-1", dir, nil))
	stream, err := client.Logs(context.Background(), &api.LogsRequest{TaskIds: []string{"t1", "unknown", "t2"}, Tail: 2})
	if err != nil {
		t.Fatal(err)
	}
	var l logLines
	if err := l.collect(t, stream); !errors.Is(err, io.EOF) {
		t.Fatalf("Logs ended with %v, want EOF", err)
	}
	got := l.get()
	// Lines of one replica are in order; replicas interleave freely.
	var t1, t2 []string
	for _, s := range got {
		if strings.HasPrefix(s, "t1: ") {
			t1 = append(t1, s)
		} else {
			t2 = append(t2, s)
		}
	}
	if !slices.Equal(t1, []string{"t1: b", "t1: c"}) || !slices.Equal(t2, []string{"t2: x", "t2: y"}) {
		t.Fatalf("lines %q", got)
	}
}

func TestLogsFollow(t *testing.T) {
	dir := t.TempDir()
	writeLog(t, dir, "t1", "old\n")
	s := NewServer("node-1", dir, nil)
	s.poll = 5 * time.Millisecond
	client := serveAgent(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := client.Logs(ctx, &api.LogsRequest{TaskIds: []string{"t1"}, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	var l logLines
	done := make(chan error, 1)
	go func() { done <- l.collect(t, stream) }()
	waitfor.Holds(t, 10*time.Second, "old line", func() (bool, string) { return slices.Equal(l.get(), []string{"t1: old"}), strings.Join(l.get(), "|") })
	writeLog(t, dir, "t1", "new\n")
	waitfor.Holds(t, 10*time.Second, "new line", func() (bool, string) {
		return slices.Equal(l.get(), []string{"t1: old", "t1: new"}), strings.Join(l.get(), "|")
	})
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("followed stream ended with %v, want Canceled", err)
	}
}

func TestLogsRefusesPathLikeIDs(t *testing.T) {
	client := serveAgent(t, NewServer("node-1", t.TempDir(), nil))
	stream, err := client.Logs(context.Background(), &api.LogsRequest{TaskIds: []string{"../agent"}})
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Logs(../agent): %v, want InvalidArgument", err)
	}
}

// fakeLoader records the archive it was given.
type fakeLoader struct{ got []byte }

func (f *fakeLoader) LoadImage(_ context.Context, r io.Reader) ([]string, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	f.got = data
	return []string{"example.com/app:1"}, nil
}

func TestLoadImage(t *testing.T) {
	loader := &fakeLoader{}
	client := serveAgent(t, NewServer("node-1", t.TempDir(), loader))
	stream, err := client.LoadImage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	archive := bytes.Repeat([]byte("layer"), 100000)
	for chunk := range slices.Chunk(archive, 64<<10) {
		if err := stream.Send(&api.LoadImageRequest{Chunk: chunk}); err != nil {
			t.Fatal(err)
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(resp.GetImages(), []string{"example.com/app:1"}) || !bytes.Equal(loader.got, archive) {
		t.Fatalf("images %v, %d of %d bytes loaded", resp.GetImages(), len(loader.got), len(archive))
	}
}

func TestLoadImageWithoutContainerd(t *testing.T) {
	client := serveAgent(t, NewServer("node-1", t.TempDir(), nil))
	stream, err := client.LoadImage(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = stream.Send(&api.LoadImageRequest{Chunk: []byte("x")})
	_, err = stream.CloseAndRecv()
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(status.Convert(err).Message(), "containerd") {
		t.Fatalf("LoadImage without a loader: %v, want FailedPrecondition naming containerd", err)
	}
}

// loadingRuntime is a runtime that also loads images, as containerd does.
type loadingRuntime struct {
	*fakeRuntime
	*fakeLoader
}

func TestAgentServerLoadsImagesThroughItsRuntime(t *testing.T) {
	rt := loadingRuntime{newFakeRuntime(exec.RuntimeContainerd), &fakeLoader{}}
	a, err := New(testConfig(t.TempDir(), nil, newFakeRuntime(exec.RuntimeHooks), rt))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Server().loader; got != ImageLoader(rt) {
		t.Fatalf("Server loads images with %v, want the runtime that can", got)
	}
	a, err = New(testConfig(t.TempDir(), nil, newFakeRuntime(exec.RuntimeHooks)))
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Server().loader; got != nil {
		t.Fatalf("Server of an agent without an image-loading runtime loads with %v", got)
	}
}
