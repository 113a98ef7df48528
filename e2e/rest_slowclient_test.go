package e2e

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// dial opens a raw connection to the server at base (http://host:port).
func dial(t *testing.T, base string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// closedWithin reports whether the server closed c within d, reading and discarding whatever
// it sent first.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// TestSlowClientsDoNotPinConnections checks the header and body timeouts: a slowloris
// connection and a stalled body are cut, and other clients are served meanwhile.
func TestSlowClientsDoNotPinConnections(t *testing.T) {
	base, key, _, _ := startServer(t, "PETSTORE_HEADER_TIMEOUT", "300ms", "PETSTORE_BODY_TIMEOUT", "600ms")
	waitHealthy(t, base)

	slowloris := dial(t, base)
	_, _ = io.WriteString(slowloris, "GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Slow: ")
	stalled := dial(t, base)
	_, _ = io.WriteString(stalled, "POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+key+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"name\":")

	req, _ := http.NewRequest(http.MethodGet, base+"/v1/pets", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a normal client meanwhile: got %v %v", resp, err)
	}
	resp.Body.Close()

	if !closedWithin(slowloris, 5*time.Second) {
		t.Error("the slowloris connection was not closed")
	}
	if !closedWithin(stalled, 5*time.Second) {
		t.Error("the stalled body's connection was not closed")
	}
}

// TestContentLengthLie sends fewer body bytes than Content-Length announced, then ends its
// side: the answer is a 400 Error body, and nothing is stored.
func TestContentLengthLie(t *testing.T) {
	base, key, _, _ := startServer(t)
	waitHealthy(t, base)
	c := dial(t, base).(*net.TCPConn)
	body := `{"name":"Rex","categoryId":1}`
	_, _ = io.WriteString(c, "POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+key+
		"\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"+body)
	_ = c.CloseWrite()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(got), `"invalid_request"`) {
		t.Errorf("got %d %s; want 400 invalid_request", resp.StatusCode, got)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/pets", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	list, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	pets, _ := io.ReadAll(list.Body)
	list.Body.Close()
	if string(pets) != "[]" {
		t.Errorf("stored after a truncated body: %s", pets)
	}
}
