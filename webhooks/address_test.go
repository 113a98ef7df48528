package webhooks_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"petstore/webhooks"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.215.14": true, "2606:2800:21f:cb07:6820:80da:af6b:8b2c": true, "8.8.8.8": true,
		"127.0.0.1": false, "10.0.0.1": false, "172.16.5.4": false, "192.168.1.1": false, "169.254.169.254": false,
		"100.100.100.200": false, "0.0.0.0": false, "::1": false, "fe80::1": false, "fd00:ec2::254": false,
		"::ffff:10.0.0.1": false, "64:ff9b::a00:1": false, "224.0.0.1": false, "255.255.255.255": false,
	} {
		if got := webhooks.Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s): got %v; want %v", addr, got, want)
		}
	}
}

// refusingResolver answers every name with the metadata address.
type refusingResolver struct{}

func (refusingResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("169.254.169.254")}, nil
}

// TestDialRefusesBeforeConnecting dials a name that resolves to the metadata address: the
// Control hook refuses it before the socket connects, so no packet leaves for it.
func TestDialRefusesBeforeConnecting(t *testing.T) {
	a := webhooks.Addresses{Resolver: refusingResolver{}}
	c, err := a.DialContext(context.Background(), "tcp", "metadata.test:80")
	if err == nil {
		c.Close()
		t.Fatal("dial: got a connection; want a refusal")
	}
	if !strings.Contains(err.Error(), "not public") {
		t.Errorf("dial: got %v; want the refusal", err)
	}
}
