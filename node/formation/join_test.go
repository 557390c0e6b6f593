package formation

import (
	"testing"

	"github.com/jaco-project/jaco/ca"
	"github.com/jaco-project/jaco/ca/token"
)

// In a CA rotation's reissue phase a worker's bundle may list the old CA
// first while the token names the new one: the rejoin's local check and
// the join response's check accept a token naming either CA of the
// bundle, and refuse one naming neither.
func TestBundleNamedDuringRotation(t *testing.T) {
	oldCA, _, err := ca.NewRootCA("cluster-1")
	if err != nil {
		t.Fatal(err)
	}
	newCA, _, err := ca.NewRootCA("cluster-1")
	if err != nil {
		t.Fatal(err)
	}
	otherCA, _, err := ca.NewRootCA("cluster-2")
	if err != nil {
		t.Fatal(err)
	}
	fp := func(pem []byte) string {
		f, err := token.Fingerprint(pem)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, bundle := range [][]byte{ca.Bundle(oldCA, newCA), ca.Bundle(newCA, oldCA)} {
		for _, named := range [][]byte{oldCA, newCA} {
			if err := bundleNamed(bundle, fp(named)); err != nil {
				t.Errorf("a token naming one of the bundle's CAs refused: %v", err)
			}
		}
		if err := bundleNamed(bundle, fp(otherCA)); err == nil {
			t.Error("a token naming another cluster's CA accepted")
		}
	}
}
