package overlay

import (
	"errors"
	"fmt"
	"log/slog"

	"golang.zx2c4.com/wireguard/conn"
	wgdevice "golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/tun"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// userspace is wireguard-go running in this process over a TUN device.
// The device owns its goroutines (TUN readers, encryption and decryption
// workers, handshake and timer routines); close stops them all and waits,
// and closing the TUN file descriptor deletes the interface.
type userspace struct {
	name string
	dev  *wgdevice.Device
}

// openUserspace creates the TUN interface and starts wireguard-go on it.
// The interface starts with fallbackUnderlayMTU-Overhead; Configure sets
// the real one.
func openUserspace(name string) (device, error) {
	t, err := tun.CreateTUN(name, fallbackUnderlayMTU-Overhead)
	if err != nil {
		return nil, fmt.Errorf("overlay: create TUN %s: %w", name, err)
	}
	log := slog.With("link", name)
	logger := &wgdevice.Logger{
		// wireguard-go's verbose lines are per packet and per handshake:
		// debug only. Its errors are transient network faults it recovers
		// from itself, hence warnings.
		Verbosef: func(format string, args ...any) { log.Debug(fmt.Sprintf(format, args...)) },
		Errorf:   func(format string, args ...any) { log.Warn(fmt.Sprintf(format, args...)) },
	}
	dev := wgdevice.NewDevice(t, conn.NewStdNetBind(), logger)
	u := &userspace{name: name, dev: dev}
	if err := dev.Up(); err != nil {
		return nil, errors.Join(fmt.Errorf("overlay: start wireguard-go on %s: %w", name, err), u.close())
	}
	return u, nil
}

func (u *userspace) apply(c wgtypes.Config) error {
	if err := u.dev.IpcSet(uapiSet(c)); err != nil {
		return fmt.Errorf("wireguard-go set: %w", err)
	}
	return nil
}

func (u *userspace) state() (*wgtypes.Device, error) {
	text, err := u.dev.IpcGet()
	if err != nil {
		return nil, fmt.Errorf("wireguard-go get: %w", err)
	}
	d, err := uapiParse(text)
	if err != nil {
		return nil, err
	}
	d.Name = u.name
	return d, nil
}

// close stops the device (which closes the TUN) and waits for its
// goroutines; the interface goes with the TUN's file descriptor, and is
// deleted explicitly should anything still hold it.
func (u *userspace) close() error {
	u.dev.Close()
	<-u.dev.Wait()
	return deleteLink(u.name)
}
