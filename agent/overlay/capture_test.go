package overlay

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// capture records every frame on one interface through an AF_PACKET
// socket, as tcpdump would, for the test to look for plaintext in.
type capture struct {
	fd   int
	done chan struct{} // closed by stop
	// drained is closed by the reader once, after stop, it has read every
	// frame the socket still held: the last frames of an exchange that has
	// completed may not have been read yet when stop comes.
	drained chan struct{}

	mu     sync.Mutex
	frames [][]byte
	bytes  int
}

// captureResult is what capture-stop reports.
type captureResult struct {
	Frames     int
	WireGuard  int  // UDP frames to or from DefaultListenPort
	SawMarker  bool // the marker appeared in some frame
	Overflowed bool // frames were dropped past maxCaptureBytes
}

const maxCaptureBytes = 64 << 20

func htons(v uint16) uint16 { return v<<8 | v>>8 }

func startCapture(iface string, wg *sync.WaitGroup) (*capture, error) {
	ifi, err := net.InterfaceByName(iface)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		return nil, fmt.Errorf("packet socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bind packet socket to %s: %w", iface, err)
	}
	// A short receive timeout lets the reader notice stop.
	tv := unix.NsecToTimeval((50 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("receive timeout: %w", err)
	}
	c := &capture{fd: fd, done: make(chan struct{}), drained: make(chan struct{})}
	wg.Go(c.read)
	return c, nil
}

func (c *capture) read() {
	defer close(c.drained)
	defer unix.Close(c.fd)
	buf := make([]byte, 1<<16)
	for {
		stopping := false
		select {
		case <-c.done:
			stopping = true
		default:
		}
		flags := 0
		if stopping {
			flags = unix.MSG_DONTWAIT
		}
		n, _, err := unix.Recvfrom(c.fd, buf, flags)
		if err != nil {
			if stopping {
				return // nothing left queued
			}
			continue // the timeout, or EINTR
		}
		c.mu.Lock()
		if c.bytes+n <= maxCaptureBytes {
			c.frames = append(c.frames, bytes.Clone(buf[:n]))
		}
		c.bytes += n
		c.mu.Unlock()
	}
}

// stop ends the capture (once) and reports on what it saw.
func (c *capture) stop(marker string) captureResult {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	<-c.drained
	c.mu.Lock()
	defer c.mu.Unlock()
	r := captureResult{Frames: len(c.frames), Overflowed: c.bytes > maxCaptureBytes}
	for _, f := range c.frames {
		if marker != "" && bytes.Contains(f, []byte(marker)) {
			r.SawMarker = true
		}
		if isWireGuardUDP(f) {
			r.WireGuard++
		}
	}
	return r
}

// isWireGuardUDP reports whether an Ethernet frame is IPv4 UDP to or from
// DefaultListenPort.
func isWireGuardUDP(f []byte) bool {
	const eth = 14
	if len(f) < eth+20 || binary.BigEndian.Uint16(f[12:14]) != unix.ETH_P_IP {
		return false
	}
	ihl := int(f[eth]&0x0f) * 4
	if f[eth+9] != unix.IPPROTO_UDP || len(f) < eth+ihl+8 {
		return false
	}
	udp := f[eth+ihl:]
	return binary.BigEndian.Uint16(udp[0:2]) == DefaultListenPort || binary.BigEndian.Uint16(udp[2:4]) == DefaultListenPort
}
