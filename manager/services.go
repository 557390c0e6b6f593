package manager

import (
	"google.golang.org/grpc"

	"github.com/jaco-project/jaco/api"
)

// ServiceDescs are the gRPC services every manager serves. The daemon
// registers them before any manager runs and routes each call to the
// manager of now (Service); a daemon without one answers for them.
var ServiceDescs = []*grpc.ServiceDesc{
	&api.ControlService_ServiceDesc,
	&api.RaftService_ServiceDesc,
	&api.MembershipService_ServiceDesc,
	&api.DispatcherService_ServiceDesc,
	&api.BackupService_ServiceDesc,
	&api.AdmissionService_ServiceDesc,
}

// Service returns this manager's implementation of the service named name
// (one of ServiceDescs), nil for any other. Writes are wrapped by the
// raftproxy: served on the leader, forwarded to it from other managers.
func (m *Manager) Service(name string) any { return m.services[name] }

// Admission is this manager's AdmissionService, through which formation
// joins are admitted on the leader.
func (m *Manager) Admission() api.AdmissionServiceServer { return m.admission }
