// Package reason gives errors at the API edge a stable reason word.
//
// Every error a client can act on is a gRPC status whose details hold an
// errdetails.ErrorInfo with Domain "jaco" and one of the words below. The
// CLI prints it as "error: <reason>: <sentence>". Code inside the daemon
// uses sentinel or typed errors and converts at the edge; nothing branches
// on message text.
package reason

import (
	"errors"
	"fmt"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Domain is the ErrorInfo domain of every jaco reason.
const Domain = "jaco"

// The reason words of docs/design.md §11.
const (
	ClusterUninitialized    = "cluster_uninitialized"
	Locked                  = "locked"
	NoLeader                = "no_leader"
	QuorumLost              = "quorum_lost"
	NotAManager             = "not_a_manager"
	TokenInvalid            = "token_invalid"
	TokenExpired            = "token_expired"
	TokenConsumed           = "token_consumed"
	PermissionDenied        = "permission_denied"
	NodeRemoved             = "node_removed"
	NodeHostsPinnedReplicas = "node_hosts_pinned_replicas"
	DrainTimeout            = "drain_timeout"
	InvalidSpec             = "invalid_spec"
	VersionConflict         = "version_conflict"
	// AlreadyInitialized refuses a second init of the same data dir.
	AlreadyInitialized = "already_initialized"
	// NotFound is an object the caller named that does not exist.
	NotFound = "not_found"
	// DashboardOff is a dashboard login asked of a daemon that serves no
	// dashboard (started without --dashboard-addr).
	DashboardOff = "dashboard_off"
	// Unavailable is a daemon the client could not reach.
	Unavailable = "unavailable"
	// NotReady is a manager that restarted and has not yet applied what
	// its log held as committed: its store would answer reads with an
	// older state than it served before. It is a matter of moments.
	NotReady = "not_ready"
	// OutcomeUnknown is a write that reached the raft log and whose fate
	// this manager can no longer learn: leadership changed, the member
	// stopped, or the connection to the leader broke after the request was
	// sent. It may or may not have been applied, so it is never retried
	// blindly (a retry of an applied versioned write would answer
	// version_conflict for a change that was made): read the object back
	// before trying again.
	OutcomeUnknown = "outcome_unknown"
	// InvalidPageToken is a page token the server did not give (a list
	// call's page_token); the listing starts again with an empty one.
	InvalidPageToken = "invalid_page_token"
	// LimitExceeded is a request that asks for more than a limit allows:
	// services in the cluster, replicas per service, replicas × spec size
	// per service and across the cluster, entries of a spec's lists
	// (depends_on, ports, mounts, env, ...), labels of a node and their
	// size. The message names the field and the limit, and nothing was
	// changed. The settable limits change with `jaco cluster update`
	// (api/limits, docs/adr/0022).
	LimitExceeded = "limit_exceeded"
	// RateLimited is an attempt refused, without being looked at, because
	// too many wrong ones came before it (unlock keys after five wrong
	// ones): the message says when the next attempt is accepted
	// (docs/adr/0023). It is not retried by clients on their own.
	RateLimited = "rate_limited"
	// CAMismatch is a server, dialled over TCP with an operator token,
	// whose certificate is not issued by the CA the token pins: the
	// address names another cluster (or a node not yet in one), or a man
	// in the middle answers. Nothing was sent; retrying will not help.
	CAMismatch = "ca_mismatch"
	// CertificateExpired is a node whose certificate expired while it was
	// off: it cannot renew it. A worker rejoins under its node id with
	// `jaco node join --rejoin` and a worker token; a manager is removed
	// and joins afresh, or, with no manager left, is started once with
	// --force-new-cluster (docs/adr/0039). The message names the commands.
	CertificateExpired = "certificate_expired"
	// AlreadyExists is a create whose name is taken (a network).
	AlreadyExists = "already_exists"
	// NetworkInUse refuses removing a network a service (or the spec a
	// service would roll back to) still names; the message lists them.
	NetworkInUse = "network_in_use"
	// SecretInUse and ConfigInUse refuse removing a secret (config) a
	// service's spec or previous spec still references; the message lists
	// the services.
	SecretInUse = "secret_in_use"
	ConfigInUse = "config_in_use"
	// VolumeInUse refuses removing a volume a service's spec or previous
	// spec names, or a replica not yet ended uses; the message names them
	// (docs/adr/0061-volumes.md).
	VolumeInUse = "volume_in_use"
	// VolumeUnavailable is a pending replica's status reason: a volume it
	// mounts lives on a node that cannot take it now (down, drained,
	// paused); the replica waits for that node and is never placed
	// elsewhere, on an empty volume. The message names the volume and the
	// node (docs/adr/0061-volumes.md).
	VolumeUnavailable = "volume_unavailable"
	// VolumeMoving is a pending replica's status reason: a volume it
	// mounts is being moved to the node it will run on (the service's
	// volume_move is MOVE); the message tells the copy's progress
	// (docs/adr/0064-volume-move.md).
	VolumeMoving = "volume_moving"
	// VolumeMoveFailed is a pending replica's status reason: the copy of
	// a volume it mounts failed and is tried again; the volume still
	// lives, untouched, on its node. The message says why
	// (docs/adr/0064-volume-move.md).
	VolumeMoveFailed = "volume_move_failed"
	// AddressInUse refuses moving a manager to an advertise address
	// another node of the cluster is recorded at; the message names it.
	// Nothing was changed (docs/adr/0038).
	AddressInUse = "address_in_use"
	// UnsupportedComposeKey is a compose file key jaco cannot honour
	// (privileged, devices, build without image, ...), every one named in
	// the message: `jaco stack deploy` refuses the whole file before it
	// changes anything. The CLI sets it; no server call returns it.
	UnsupportedComposeKey = "unsupported_compose_key"
	// InvalidLaunchConfig is a launch configuration directory with
	// something wrong (an unknown key, a bad value, a missing launch
	// hook, a dependency cycle), every problem named FILE:LINE in the
	// message: `jaco launch` refuses it before it changes anything. The
	// CLI sets it; no server call returns it.
	InvalidLaunchConfig = "invalid_launch_config"
)

// UpdateInProgress refuses a rebalance of a service whose update or
// rollback is rolling or paused: the moves would mix with its own
// (docs/adr/0040). It is for the update to end first.
const UpdateInProgress = "update_in_progress"

// The outcomes of a CLI command that waits for a service to converge
// (create, update, rollback, scale; docs/design.md §8): the write
// succeeded, the service did not get where it was sent. The CLI sets them
// from the update_status and replicas it follows, not a server.
const (
	// UpdatePaused is an update the leader paused under its failure
	// action pause: replicas of the new spec failed; the message names
	// the replica, its node and why.
	UpdatePaused = "update_paused"
	// RollbackPaused is a rollback paused because its own replicas failed.
	RollbackPaused = "rollback_paused"
	// UpdateRolledBack is an update whose failure action rollback
	// returned every slot to the previous spec.
	UpdateRolledBack = "update_rolled_back"
	// ReplicaFailed is a replica that ended and whose restart policy
	// allows no more attempts.
	ReplicaFailed = "replica_failed"
)

// The reasons a replica's status carries when its node could not pull its
// image (`jaco service ps`); the message holds the registry's answer.
const (
	// ImagePullDenied is a pull the registry refused (401 or 403): no
	// credentials for it, or wrong ones (service update
	// --with-registry-auth).
	ImagePullDenied = "image_pull_denied"
	// ImagePullFailed is any other failed pull: the registry unreachable,
	// its certificate not trusted by the node, the image not there.
	ImagePullFailed = "image_pull_failed"
	// SecretMissing and ConfigMissing are a secret or config the
	// replica's spec names that did not reach its node with the replica
	// (the message names it): removed since, or not sent by the manager.
	SecretMissing = "secret_missing"
	ConfigMissing = "config_missing"
)

// retryable lists the reasons a client may retry unchanged. It must never
// hold OutcomeUnknown.
var retryable = map[string]bool{NoLeader: true, Unavailable: true, NotReady: true}

// Error returns a gRPC status error carrying word as its reason.
func Error(code codes.Code, word, format string, args ...any) error {
	st := status.New(code, fmt.Sprintf(format, args...))
	withInfo, err := st.WithDetails(&errdetails.ErrorInfo{Reason: word, Domain: Domain})
	if err != nil {
		// Only a marshalling failure of a fixed message gets here.
		return st.Err()
	}
	return withInfo.Err()
}

// Of returns the reason word carried by err, or "" when it carries none.
func Of(err error) string {
	if err == nil {
		return ""
	}
	var se interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &se) {
		return ""
	}
	for _, d := range se.GRPCStatus().Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == Domain {
			return info.Reason
		}
	}
	return ""
}

// Retryable reports whether err carries a reason a client may retry.
func Retryable(err error) bool { return retryable[Of(err)] }

// Sentence returns the human part of err: the status message when err is a
// gRPC status, err.Error() otherwise.
func Sentence(err error) string {
	if st, ok := status.FromError(err); ok {
		return st.Message()
	}
	return err.Error()
}

// Described wraps err so that it reads as the CLI prints errors,
// "error: <reason>: <sentence>": a log line carries the stable reason
// word, which a plain status error's text does not. errors.Is and
// errors.As see err through it.
func Described(err error) error { return described{err} }

type described struct{ err error }

func (e described) Error() string {
	if w := Of(e.err); w != "" {
		return "error: " + w + ": " + Sentence(e.err)
	}
	return e.err.Error()
}

func (e described) Unwrap() error { return e.err }

// CA rotation (docs/adr/0041).
const (
	// CAInvalid refuses a CA an operator brings to a rotation (`jaco
	// cluster ca --rotate --cert-file --key-file`): not a CA certificate,
	// not valid now, or a key that does not belong to it. Nothing changed.
	CAInvalid = "ca_invalid"
	// CARotationInProgress refuses a rotation while another one runs;
	// `jaco cluster status` shows how far it got.
	CARotationInProgress = "ca_rotation_in_progress"
)
