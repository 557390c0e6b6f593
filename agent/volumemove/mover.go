package volumemove

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/agent/volumecopy"
	"github.com/jaco-project/jaco/agent/volumes"
	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/internal/backoff"
)

// progressEvery is how often a copy reports its bytes; reannounce, how
// often a finished copy says so again until its order goes (a report may
// be lost with a session).
const (
	progressEvery = time.Second
	reannounce    = 5 * time.Second
)

// Mover pulls the volumes this node's orders say it receives, one
// goroutine per order, each stopped when its order goes.
type Mover struct {
	NodeID string
	Dir    volumes.Dir
	Orders *Orders
	// Dial connects to another node (mutual TLS with this node's
	// certificate).
	Dial func(ctx context.Context, addr string) (*grpc.ClientConn, error)
	// Report tells the dispatcher of a copy's progress, failure or end.
	Report func(ctx context.Context, r *api.ReportVolumeMoveRequest) error
	Log    *slog.Logger

	ctx     context.Context // the node's agent's: ends every pull
	wg      *sync.WaitGroup
	mu      sync.Mutex
	running map[string]context.CancelFunc
}

// Start binds m to ctx and wg, which own its goroutines.
func (m *Mover) Start(ctx context.Context, wg *sync.WaitGroup) {
	m.ctx, m.wg, m.running = ctx, wg, map[string]context.CancelFunc{}
}

func key(o *api.VolumeMoveOrder) string {
	return fmt.Sprintf("%s/%d", o.GetVolumeId(), o.GetGeneration())
}

// Follow takes the node's latest volume_moves: the Source's orders, and
// a pull for each order this node receives, the pulls of orders gone
// cancelled.
func (m *Mover) Follow(orders []*api.VolumeMoveOrder) {
	m.Orders.Set(orders)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ctx == nil || m.ctx.Err() != nil {
		return
	}
	want := map[string]*api.VolumeMoveOrder{}
	for _, o := range orders {
		if o.GetToNode() == m.NodeID {
			want[key(o)] = o
		}
	}
	for k, cancel := range m.running {
		if want[k] == nil {
			cancel()
			delete(m.running, k)
		}
	}
	for k, o := range want {
		if m.running[k] != nil {
			continue
		}
		ctx, cancel := context.WithCancel(m.ctx)
		m.running[k] = cancel
		m.wg.Go(func() { m.receive(ctx, o) })
	}
}

// receive pulls o's volume until it is here, trying again with backoff
// after each failure (reported), then says it is done until o goes.
func (m *Mover) receive(ctx context.Context, o *api.VolumeMoveOrder) {
	log := m.Log.With("volume", o.GetName(), "generation", o.GetGeneration(), "from_node", o.GetFromNode())
	log.Info("volume move: receiving")
	for failures := 0; ; failures++ {
		start := time.Now()
		err := m.pull(ctx, o)
		if err == nil {
			log.Info("volume move: received and verified", "duration", time.Since(start))
			break
		}
		if ctx.Err() != nil {
			return
		}
		log.Warn("volume move: copy failed; trying again", "err", err)
		m.report(ctx, &api.ReportVolumeMoveRequest{VolumeId: o.GetVolumeId(), Generation: o.GetGeneration(), Error: err.Error()})
		if !backoff.Sleep(ctx, backoff.Delay(time.Second, 30*time.Second, failures)) {
			return
		}
	}
	for {
		m.report(ctx, &api.ReportVolumeMoveRequest{VolumeId: o.GetVolumeId(), Generation: o.GetGeneration(), Done: true})
		if !backoff.Sleep(ctx, reannounce) {
			return
		}
	}
}

// pull is one attempt: from the resume point to a verified copy.
func (m *Mover) pull(ctx context.Context, o *api.VolumeMoveOrder) error {
	data, state, done, err := m.Dir.Receiving(o.GetName(), o.GetVolumeId(), o.GetGeneration(), o.GetOptions())
	if err != nil || done {
		return err
	}
	r := &volumecopy.Receiver{Dir: data, State: state, ProgressEvery: progressEvery,
		Progress: func(done, total int64) {
			m.report(ctx, &api.ReportVolumeMoveRequest{VolumeId: o.GetVolumeId(), Generation: o.GetGeneration(), BytesDone: done, BytesTotal: total})
		}}
	req, err := r.Request(o.GetVolumeId(), o.GetGeneration())
	if err != nil {
		return err
	}
	conn, err := m.Dial(ctx, o.GetFromAddress())
	if err != nil {
		return fmt.Errorf("dial node %s at %s: %w", o.GetFromNode(), o.GetFromAddress(), err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := api.NewAgentServiceClient(conn).ReadVolume(ctx, req)
	if err != nil {
		return fmt.Errorf("read volume from node %s: %w", o.GetFromNode(), err)
	}
	if err := r.Receive(ctx, req, stream); err != nil {
		if volumecopy.IsRestart(err) {
			// The source does not know where this copy stood: start over.
			err = errors.Join(err, r.Start())
		}
		return err
	}
	return m.Dir.Received(o.GetName(), o.GetGeneration())
}

// report sends r, giving up after a while: the next report says more.
func (m *Mover) report(ctx context.Context, r *api.ReportVolumeMoveRequest) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := m.Report(ctx, r); err != nil && ctx.Err() == nil {
		m.Log.Debug("volume move: report failed", "volume_id", r.GetVolumeId(), "err", err)
	}
}
