package overlay

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// wireguard-go is configured through the text of WireGuard's cross-platform
// configuration protocol (device.IpcSet / IpcGet): keys in hex, one
// key=value a line, a public_key line starting each peer.

// uapiSet renders c as a "set" operation's body.
func uapiSet(c wgtypes.Config) string {
	var b strings.Builder
	line := func(k, v string) { b.WriteString(k + "=" + v + "\n") }
	if c.PrivateKey != nil {
		line("private_key", hex.EncodeToString(c.PrivateKey[:]))
	}
	if c.ListenPort != nil {
		line("listen_port", strconv.Itoa(*c.ListenPort))
	}
	if c.ReplacePeers {
		line("replace_peers", "true")
	}
	for _, p := range c.Peers {
		line("public_key", hex.EncodeToString(p.PublicKey[:]))
		if p.Remove {
			line("remove", "true")
			continue
		}
		if p.UpdateOnly {
			line("update_only", "true")
		}
		if p.Endpoint != nil {
			line("endpoint", p.Endpoint.AddrPort().String())
		}
		if p.PersistentKeepaliveInterval != nil {
			line("persistent_keepalive_interval", strconv.Itoa(int(p.PersistentKeepaliveInterval.Seconds())))
		}
		if p.ReplaceAllowedIPs {
			line("replace_allowed_ips", "true")
		}
		for _, n := range p.AllowedIPs {
			line("allowed_ip", n.String())
		}
	}
	return b.String()
}

// uapiParse reads a "get" operation's answer.
func uapiParse(text string) (*wgtypes.Device, error) {
	d := &wgtypes.Device{Type: wgtypes.Userspace}
	var p *wgtypes.Peer
	var hsSec, hsNsec int64
	flush := func() {
		if p == nil {
			return
		}
		if hsSec != 0 || hsNsec != 0 {
			p.LastHandshakeTime = time.Unix(hsSec, hsNsec)
		}
		d.Peers = append(d.Peers, *p)
		p, hsSec, hsNsec = nil, 0, 0
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if sc.Text() == "" {
			continue
		}
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			return nil, fmt.Errorf("uapi line %q: no '='", sc.Text())
		}
		var err error
		switch k {
		case "private_key":
			d.PrivateKey, err = hexKey(v)
			d.PublicKey = d.PrivateKey.PublicKey()
		case "listen_port":
			d.ListenPort, err = strconv.Atoi(v)
		case "fwmark":
			d.FirewallMark, err = strconv.Atoi(v)
		case "public_key":
			flush()
			p = &wgtypes.Peer{}
			p.PublicKey, err = hexKey(v)
		default:
			if p == nil {
				return nil, fmt.Errorf("uapi line %q before any peer", sc.Text())
			}
			err = peerLine(p, k, v, &hsSec, &hsNsec)
		}
		if err != nil {
			return nil, fmt.Errorf("uapi %s: %w", k, err)
		}
	}
	flush()
	return d, sc.Err()
}

func peerLine(p *wgtypes.Peer, k, v string, hsSec, hsNsec *int64) error {
	var err error
	switch k {
	case "preshared_key":
		p.PresharedKey, err = hexKey(v)
	case "protocol_version":
		p.ProtocolVersion, err = strconv.Atoi(v)
	case "endpoint":
		var ap netip.AddrPort
		if ap, err = netip.ParseAddrPort(v); err == nil {
			p.Endpoint = net.UDPAddrFromAddrPort(ap)
		}
	case "last_handshake_time_sec":
		*hsSec, err = strconv.ParseInt(v, 10, 64)
	case "last_handshake_time_nsec":
		*hsNsec, err = strconv.ParseInt(v, 10, 64)
	case "tx_bytes":
		p.TransmitBytes, err = strconv.ParseInt(v, 10, 64)
	case "rx_bytes":
		p.ReceiveBytes, err = strconv.ParseInt(v, 10, 64)
	case "persistent_keepalive_interval":
		var s int
		s, err = strconv.Atoi(v)
		p.PersistentKeepaliveInterval = time.Duration(s) * time.Second
	case "allowed_ip":
		var pf netip.Prefix
		if pf, err = netip.ParsePrefix(v); err == nil {
			p.AllowedIPs = append(p.AllowedIPs, ipNet(pf))
		}
	default:
		// A key a newer wireguard-go reports: not ours to refuse.
	}
	return err
}

func hexKey(s string) (wgtypes.Key, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return wgtypes.Key{}, err
	}
	return wgtypes.NewKey(b)
}
