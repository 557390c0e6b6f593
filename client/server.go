package client

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultPort is the port a server address without one means: the
// daemon's one TCP port by default (docs/design.md §12, jacod
// --listen-addr).
const DefaultPort = "7000"

// ServerAddr checks a server address as an operator writes it (--server,
// $JACO_SERVER) and returns it as HOST:PORT. HOST alone means DefaultPort;
// an IPv6 literal may be given bare (::1, meaning port 7000) or in
// brackets ([::1], [::1]:7001). A bare IPv6 literal always means
// DefaultPort: ::1:7001 is an address, not ::1 with a port.
func ServerAddr(s string) (string, error) {
	host, port := s, DefaultPort
	switch {
	case s == "":
		return "", errors.New("server address is empty; want HOST or HOST:PORT")
	case strings.Contains(s, "://"):
		return "", fmt.Errorf("server address %q is a URL; want HOST or HOST:PORT", s)
	case isIPv6(s):
	case strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]"):
		host = s[1 : len(s)-1]
	case strings.Contains(s, ":"):
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return "", fmt.Errorf("server address %q: want HOST, HOST:PORT or [IPv6]:PORT: %w", s, err)
		}
		host, port = h, p
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return "", fmt.Errorf("server address %q: port %q is not a number from 1 to 65535", s, port)
	}
	// Brackets are for IPv6 literals only, whose colons they set apart.
	if (strings.Contains(host, ":") || strings.HasPrefix(s, "[")) && !isIPv6(host) || !validHost(host) {
		return "", fmt.Errorf("server address %q: %q is neither an IP address nor a host name", s, host)
	}
	return net.JoinHostPort(host, port), nil
}

func isIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6()
}

// validHost accepts an IP address or a DNS name: letters, digits, '-',
// '_' and '.'. It keeps a URL ("https://h") or a stray space from being
// dialled as a name.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, r := range h {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
