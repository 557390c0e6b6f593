package reason

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
)

// TestDescribed: a status with a reason reads as the CLI prints it, any
// other error as itself, and both are still seen through the wrapper.
func TestDescribed(t *testing.T) {
	st := Error(codes.FailedPrecondition, AddressInUse, "10.0.0.2:7000 is node n2's")
	if got, want := Described(st).Error(), "error: address_in_use: 10.0.0.2:7000 is node n2's"; got != want {
		t.Errorf("Described(status) = %q, want %q", got, want)
	}
	if Of(Described(st)) != AddressInUse || !errors.Is(Described(st), st) {
		t.Error("the reason and the status are not seen through Described")
	}
	plain := errors.New("connection refused")
	if got := Described(plain).Error(); got != plain.Error() || !errors.Is(Described(plain), plain) {
		t.Errorf("Described(plain) = %q, want it unchanged and unwrappable", got)
	}
}
