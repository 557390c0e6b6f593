package dispatcher

import (
	"time"

	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
	"github.com/jaco-project/jaco/api/paging"
	"github.com/jaco-project/jaco/internal/pace"
	"github.com/jaco-project/jaco/manager/state/store"
)

// Assignments implements api.DispatcherServiceServer: a COMPLETE message,
// then INCREMENTAL ones, changes gathered over the batch window. The
// node's task events come from the term's hub (taskHub).
func (s *Server) Assignments(req *api.AssignmentsRequest, stream grpc.ServerStreamingServer[api.AssignmentsMessage]) error {
	t, sess, err := s.session(stream.Context(), req.GetSessionId())
	if err != nil {
		return err
	}
	set := newAssignmentSet(sess.nodeID)
	// tasks is the node's tasks as the last view held them, until they
	// are sent. They are the store's own objects, shared (ADR 0031): the
	// set keeps fingerprints of them and send only marshals them. Neither
	// clones nor the view outlive the COMPLETE message: a stream lasts
	// as long as its session, and a manager restarted with 100 000 tasks
	// held a clone of each in its nodes' streams (docs/bench/largestore.md).
	var tasks []*api.Task
	read := func(tx store.ReadTx) {
		tx.EachTask("", sess.nodeID, func(t *api.Task) bool {
			tasks = append(tasks, t)
			return true
		})
	}
	feed, index := t.tasks.subscribe(s.st, sess.nodeID, read)
	defer feed.cancel()
	sendComplete := func() error {
		out := set.complete(tasks)
		tasks = nil
		return send(stream, s.st, api.AssignmentsMessage_TYPE_COMPLETE, out, nil)
	}
	if err := sendComplete(); err != nil {
		return err
	}

	// takeQueued applies the feed's events that the last view does not
	// hold to the set, and tells whether any changed it; a reset (the
	// store was restored) starts over with a COMPLETE message.
	takeQueued := func() (changed bool, err error) {
		events, ended := feed.take()
		for _, e := range events {
			if e.Kind == store.EventReset {
				// Always taken: a restore may keep the index it
				// replaced, and a COMPLETE message too many is harmless.
				s.st.ViewWithIndex(func(tx store.ReadTx, i uint64) { read(tx); index = i })
				if err := sendComplete(); err != nil {
					return false, err
				}
				continue
			}
			if e.Index <= index {
				continue // in the view already
			}
			set.observe(e.Object.(*api.Task), e.Kind == store.EventDelete)
			changed = true
		}
		if ended {
			return false, errNoLeader()
		}
		return changed, nil
	}
	// A change after a quiet spell goes at once; while changes keep
	// coming, at most one message per batch window.
	pacer := pace.New(s.cfg.batchWindow)
	timer := time.NewTimer(s.cfg.batchWindow)
	timer.Stop()
	waiting := false // timer runs: changes are being gathered
	for {
		select {
		case <-feed.ready:
			changed, err := takeQueued()
			if err != nil {
				return err
			}
			if changed && !waiting {
				waiting = true
				timer.Reset(pacer.Delay())
			}
		case <-timer.C:
			waiting = false
			// What is queued already (the rest of the commit that woke
			// an idle stream) goes in this message.
			if _, err := takeQueued(); err != nil {
				return err
			}
			updated, removed := set.changes()
			if len(updated)+len(removed) == 0 {
				continue
			}
			if err := send(stream, s.st, api.AssignmentsMessage_TYPE_INCREMENTAL, updated, removed); err != nil {
				return err
			}
			pacer.Acted()
		case <-sess.done:
			return sess.err
		case <-t.ctx.Done():
			return errNoLeader()
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
	}
}

// send sends updated and removed in as many messages of typ as keep each
// within a page's bounds (docs/adr/0019-list-paging.md), the removals with
// the last: a node running many replicas of large specs would otherwise
// get a message over gRPC's 4 MiB limit, and its agent no assignments at
// all. The parts of a COMPLETE set but the last say more is coming, so the
// agent drops what the set lacks only once it has the whole set. Each
// message carries the secrets and configs its tasks reference, whole, read
// from st as it is sent.
func send(stream grpc.ServerStreamingServer[api.AssignmentsMessage], st *store.Store, typ api.AssignmentsMessage_Type, updated []*api.Task, removed []string) error {
	var runs [][]*api.Task
	var fs []files
	for _, run := range paging.Split(updated) {
		parts, pfs := withFiles(st, run)
		runs, fs = append(runs, parts...), append(fs, pfs...)
	}
	for i, run := range runs {
		last := i == len(runs)-1
		msg := &api.AssignmentsMessage{
			Type: typ, Updated: run, More: typ == api.AssignmentsMessage_TYPE_COMPLETE && !last,
			Secrets: fs[i].secrets, Configs: fs[i].configs,
		}
		if last {
			msg.Removed = removed
		}
		if err := stream.Send(msg); err != nil {
			return err
		}
	}
	return nil
}
