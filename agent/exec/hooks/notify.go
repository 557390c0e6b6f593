package hooks

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"

	"github.com/jaco-project/jaco/agent/exec"
	"github.com/jaco-project/jaco/internal/durable"
)

// The notify socket of a replica with a notify health check, and the mark
// that it said READY=1 (so that an agent started later knows: launch says
// it once).
const (
	notifySocketFile = "notify.sock"
	notifyReadyFile  = "hooks-notify-ready"
)

// maxSocketPath is the longest path a unix socket address holds
// (sun_path is 108 bytes with its NUL).
const maxSocketPath = 107

// notifies reports whether the replica's spec has a notify health check:
// only then does it get a notify socket.
func (c *controller) notifies() bool {
	return c.rep.Task.GetSpec().GetHealth().GetNotify() != nil
}

// notifyEnv names the socket for launch, the jaco way and sd_notify's.
func (c *controller) notifyEnv() []string {
	p := c.path(notifySocketFile)
	return []string{exec.EnvNotifySocket + "=" + p, exec.EnvSystemdNotifySocket + "=" + p}
}

// bindNotify binds the replica's notify socket, replacing the file an
// earlier jacod left: a socket nobody reads refuses datagrams, so a
// launch that outlived that jacod reaches this one at the same path. A
// launch running as another user (cred) owns the socket: sending to it
// needs write permission on it.
func (c *controller) bindNotify(cred *credential) (*net.UnixConn, error) {
	p := c.path(notifySocketFile)
	if len(p) > maxSocketPath {
		return nil, fmt.Errorf("notify socket path %s is longer than %d bytes", p, maxSocketPath)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove old notify socket: %w", err)
	}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("bind notify socket: %w", err)
	}
	if cred != nil {
		if err := os.Chown(p, int(cred.UID), int(cred.GID)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("hand notify socket to uid %d: %w", cred.UID, err)
		}
	}
	return conn, nil
}

// holdNotify keeps the socket Start bound until Notifications takes it;
// datagrams wait in its buffer meanwhile.
func (c *controller) holdNotify(conn *net.UnixConn) {
	c.nmu.Lock()
	defer c.nmu.Unlock()
	if c.notifyConn != nil {
		c.notifyConn.Close()
	}
	c.notifyConn = conn
}

// releaseNotify closes a socket no one took (Start failed, or Remove).
func (c *controller) releaseNotify() {
	c.holdNotify(nil)
}

// Notifications implements exec.Notifier. It takes the socket Start
// bound or, for a replica started by an earlier jacod, binds it again.
func (c *controller) Notifications(ctx context.Context) (<-chan exec.Notification, error) {
	if !c.notifies() {
		return nil, errors.New("notifications: the replica's spec has no notify health check")
	}
	c.nmu.Lock()
	conn := c.notifyConn
	c.notifyConn = nil
	c.nmu.Unlock()
	if conn == nil {
		started, err := c.started()
		if err != nil {
			return nil, fmt.Errorf("notifications: %w", err)
		}
		if !started {
			return nil, errors.New("notifications: the replica was not started")
		}
		// The user launch runs as is the one it was started with.
		var spec launchSpec
		if err := readJSON(c.path(launchFile), &spec); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("notifications: read launch spec: %w", err)
		}
		if conn, err = c.bindNotify(spec.Proc.Cred); err != nil {
			return nil, fmt.Errorf("notifications: %w", err)
		}
	}
	_, err := os.Stat(c.path(notifyReadyFile))
	replay := err == nil
	ch := make(chan exec.Notification, 16)
	go c.readNotifications(ctx, conn, replay, ch)
	return ch, nil
}

// readNotifications passes the socket's datagrams on until ctx ends (it
// closes the socket, which ends the read) or reading fails; then it
// closes ch.
func (c *controller) readNotifications(ctx context.Context, conn *net.UnixConn, replay bool, ch chan<- exec.Notification) {
	defer close(ch)
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer func() {
		if stop() {
			conn.Close()
		}
	}()
	send := func(n exec.Notification) bool {
		select {
		case ch <- n:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if replay && !send(exec.Notification{Ready: true, Replayed: true, At: time.Now()}) {
		return
	}
	ready := replay
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			if ctx.Err() == nil {
				c.log.Warn("read notify socket", "err", err)
			}
			return
		}
		msg := exec.ParseNotification(buf[:n], time.Now())
		if msg.Ready && !ready {
			ready = true
			if err := durable.WriteFile(c.path(notifyReadyFile), nil, 0o600); err != nil {
				c.log.Warn("remember READY=1", "err", err)
			}
		}
		if !send(msg) {
			return
		}
	}
}
