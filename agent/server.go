package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sync"
	"time"

	"github.com/jaco-project/jaco/agent/logs"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/reason"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// logBatch bounds the lines in one LogsMessage; logFlush is how long a
// follower holds lines before sending a partial batch.
const (
	logBatch = 256
	logFlush = 50 * time.Millisecond
)

// Server is this node's api.AgentServiceServer: logs of the replicas it
// runs or ran, and image loading. Who may call it is decided by the
// node's gRPC interceptors, not here.
type Server struct {
	api.UnimplementedAgentServiceServer
	nodeID string
	dir    string
	loader ImageLoader
	poll   time.Duration
}

// NewServer serves the logs under the agent state dir dir; loader may be
// nil (LoadImage is then refused).
func NewServer(nodeID, dir string, loader ImageLoader) *Server {
	return &Server{nodeID: nodeID, dir: dir, loader: loader}
}

// Server returns the AgentService of this agent; images are loaded by the
// first of its runtimes that implements ImageLoader (none: LoadImage is
// refused).
func (a *Agent) Server() *Server {
	return NewServer(a.cfg.NodeID, a.cfg.Dir, imageLoader(a.cfg.Runtimes))
}

// Logs streams the lines of the requested replicas' kept logs, each
// replica's in order; without follow the replicas come one after the
// other in the order asked. Replicas this node has no log for are skipped
// (when following, their log is waited for).
func (s *Server) Logs(req *api.LogsRequest, stream grpc.ServerStreamingServer[api.LogsMessage]) error {
	for _, id := range req.GetTaskIds() {
		if err := validTaskID(id); err != nil {
			return reason.Error(codes.InvalidArgument, reason.InvalidSpec, "%v", err)
		}
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	lines := make(chan *api.LogLine, logBatch)
	errc := make(chan error, len(req.GetTaskIds()))
	opts := logs.Options{Tail: int(req.GetTail()), Follow: req.GetFollow(), Poll: s.poll}
	if req.GetSince() != nil {
		opts.Since = req.GetSince().AsTime()
	}
	// The logs directory of LogPath.
	store := logs.NewStore(filepath.Join(s.dir, "logs"))
	read := func(id string) {
		err := logs.Read(ctx, store.Path(id), opts, func(l logs.Line) error {
			line := &api.LogLine{TaskId: id, Stream: "stdout", Data: l.Data, NodeId: s.nodeID}
			if !l.Time.IsZero() {
				line.Time = timestamppb.New(l.Time)
			}
			select {
			case lines <- line:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		if err != nil && !errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil {
			errc <- fmt.Errorf("read log of %s: %w", id, err)
		}
	}
	var wg sync.WaitGroup
	if opts.Follow {
		for _, id := range req.GetTaskIds() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				read(id)
			}()
		}
	} else {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, id := range req.GetTaskIds() {
				read(id)
			}
		}()
	}
	go func() {
		wg.Wait()
		close(lines)
	}()
	// Whatever ends the loop, the readers stop and are waited for.
	defer func() {
		cancel()
		for range lines {
		}
	}()
	return s.send(stream, lines, errc)
}

// send batches lines into messages until lines closes.
func (s *Server) send(stream grpc.ServerStreamingServer[api.LogsMessage], lines <-chan *api.LogLine, errc <-chan error) error {
	var batch []*api.LogLine
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := stream.Send(&api.LogsMessage{Lines: batch})
		batch = nil
		return err
	}
	tick := time.NewTicker(logFlush)
	defer tick.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				if err := flush(); err != nil {
					return err
				}
				select {
				case err := <-errc:
					return status.Error(codes.Internal, err.Error())
				default:
					return nil
				}
			}
			batch = append(batch, l)
			if len(batch) >= logBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		case <-tick.C:
			if err := flush(); err != nil {
				return err
			}
		}
	}
}

// LoadImage feeds the streamed archive to the node's image loader.
func (s *Server) LoadImage(stream grpc.ClientStreamingServer[api.LoadImageRequest, api.LoadImageResponse]) error {
	if s.loader == nil {
		return status.Error(codes.FailedPrecondition, "this node has no containerd runtime: it cannot load images")
	}
	images, err := s.loader.LoadImage(stream.Context(), &chunkReader{stream: stream})
	if err != nil {
		return status.Errorf(codes.InvalidArgument, "load image archive: %v", err)
	}
	return stream.SendAndClose(&api.LoadImageResponse{Images: images})
}

// chunkReader reads the archive from the stream's chunks, in the loader's
// goroutine.
type chunkReader struct {
	stream grpc.ClientStreamingServer[api.LoadImageRequest, api.LoadImageResponse]
	buf    []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		req, err := r.stream.Recv()
		if errors.Is(err, io.EOF) {
			return 0, io.EOF
		}
		if err != nil {
			return 0, fmt.Errorf("receive image archive: %w", err)
		}
		r.buf = req.GetChunk()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
