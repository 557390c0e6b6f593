package proxy

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"

	"google.golang.org/grpc"
)

type msg struct{ n int }

// source yields msgs, then end.
type source struct {
	grpc.ClientStream
	msgs []*msg
	end  error
}

func (s *source) Recv() (*msg, error) {
	if len(s.msgs) == 0 {
		return nil, s.end
	}
	m := s.msgs[0]
	s.msgs = s.msgs[1:]
	return m, nil
}

// sink records what it is sent and fails after failAfter messages when set.
type sink struct {
	grpc.ServerStream
	sent      []int
	failAfter int
}

var errGone = errors.New("caller went away")

func (s *sink) Send(m *msg) error {
	if s.failAfter > 0 && len(s.sent) == s.failAfter {
		return errGone
	}
	s.sent = append(s.sent, m.n)
	return nil
}

func TestRelay(t *testing.T) {
	errLeader := errors.New("leader failed")
	tests := []struct {
		name      string
		end       error
		failAfter int
		wantErr   error
		wantSent  []int
	}{
		{name: "until EOF", end: io.EOF, wantSent: []int{1, 2, 3}},
		{name: "leader error", end: errLeader, wantErr: errLeader, wantSent: []int{1, 2, 3}},
		{name: "caller gone", end: io.EOF, failAfter: 2, wantErr: errGone, wantSent: []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &source{msgs: []*msg{{1}, {2}, {3}}, end: tt.end}
			dst := &sink{failAfter: tt.failAfter}
			if err := Relay[msg](dst, src); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Relay = %v, want %v", err, tt.wantErr)
			}
			if !slices.Equal(dst.sent, tt.wantSent) {
				t.Fatalf("sent %v, want %v", dst.sent, tt.wantSent)
			}
		})
	}
}

type ctxKey struct{}

func TestWithContext(t *testing.T) {
	ctx := context.WithValue(context.Background(), ctxKey{}, "routed")
	dst := &sink{}
	stream := WithContext[msg](dst, ctx)
	if got := stream.Context().Value(ctxKey{}); got != "routed" {
		t.Fatalf("Context().Value = %v, want routed", got)
	}
	if err := stream.Send(&msg{7}); err != nil || !slices.Equal(dst.sent, []int{7}) {
		t.Fatalf("Send through wrapper: %v, sent %v; want the wrapped stream to get it", err, dst.sent)
	}
}
