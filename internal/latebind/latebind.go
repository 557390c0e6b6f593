// Package latebind serves a gRPC service whose implementation comes and
// goes while the server runs.
//
// A grpc.Server takes its services before it serves and never lets them
// go, but a daemon's manager starts after its listeners (at init, join,
// unlock or promotion) and stops before them (at demotion). Register puts
// a stand-in for the service on the server that asks, call by call, for
// the implementation of now. The stand-in is generic over the service
// descriptor, so no per-service forwarding code is written by hand.
package latebind

import (
	"context"

	"google.golang.org/grpc"
)

// Impl returns the implementation to serve a call with, or the error to
// answer it with when there is none.
type Impl func() (any, error)

// anything is the handler type of a stand-in: it accepts every value,
// since the implementation is checked per call.
type anything interface{}

// Register registers desc on r, served by whatever impl returns at each
// call. The value impl returns must implement desc's handler type; the
// generated handlers assert it.
//
// A unary call's interceptors run inside the generated handler, so when
// impl fails they are skipped and the caller gets impl's error: impl must
// answer with what the server's policy would (a daemon answers that it
// runs no manager).
func Register(r grpc.ServiceRegistrar, desc *grpc.ServiceDesc, impl Impl) {
	r.RegisterService(Desc(desc, impl), struct{}{})
}

// Desc returns a copy of desc whose handlers call impl first.
func Desc(desc *grpc.ServiceDesc, impl Impl) *grpc.ServiceDesc {
	d := *desc
	d.HandlerType = (*anything)(nil)
	d.Methods = make([]grpc.MethodDesc, len(desc.Methods))
	for i, m := range desc.Methods {
		d.Methods[i] = grpc.MethodDesc{MethodName: m.MethodName, Handler: unary(m.Handler, impl)}
	}
	d.Streams = make([]grpc.StreamDesc, len(desc.Streams))
	for i, s := range desc.Streams {
		s.Handler = stream(s.Handler, impl)
		d.Streams[i] = s
	}
	return &d
}

func unary(h grpc.MethodHandler, impl Impl) grpc.MethodHandler {
	return func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
		srv, err := impl()
		if err != nil {
			return nil, err
		}
		return h(srv, ctx, dec, icpt)
	}
}

func stream(h grpc.StreamHandler, impl Impl) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		srv, err := impl()
		if err != nil {
			return err
		}
		return h(srv, ss)
	}
}
