package e2e

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// latencyClientsEnv names, in the helper process, the server, the subscribers and their key.
const latencyClientsEnv = "PETSTORE_TEST_LATENCY_CLIENTS"

// TestLatencyClientsHelper is not a test: in the process BenchmarkPetAddedLatency starts, it
// opens the subscribers (ws or sse), says "ready", and once each has read its events (or
// after a minute) writes one line "ID UNIXNANO" per arrival, then "cpu NANOSECONDS", its own
// CPU time while it read.
func TestLatencyClientsHelper(t *testing.T) {
	spec := os.Getenv(latencyClientsEnv)
	if spec == "" {
		t.Skip("the helper process of BenchmarkPetAddedLatency")
	}
	parts := strings.Split(spec, ",") // addr, transport, subscribers, events each, key
	n, _ := strconv.Atoi(parts[2])
	want, _ := strconv.Atoi(parts[3])
	subscribe := wsSubscribe
	if parts[1] == "sse" {
		subscribe = sseSubscribe
	}
	type arrival struct{ id, at int64 }
	arrivals := make([][]arrival, n) // each subscriber's, in its own slice
	readers := make([]eventReader, n)
	for i := range n {
		c, r, err := subscribe(parts[0], parts[4])
		if err != nil {
			fmt.Println("error:", i, err)
			os.Exit(1)
		}
		defer c.Close()
		readers[i], arrivals[i] = r, make([]arrival, 0, want)
		time.AfterFunc(time.Minute, func() { _ = c.Close() })
	}
	cpu0 := cpuTime()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for len(arrivals[i]) < want {
				id, err := readers[i].next()
				if err != nil {
					return
				}
				arrivals[i] = append(arrivals[i], arrival{id, time.Now().UnixNano()})
			}
		})
	}
	fmt.Println("ready")
	wg.Wait()
	cpu := cpuTime() - cpu0
	w := bufio.NewWriter(os.Stdout)
	for _, as := range arrivals {
		for _, a := range as {
			fmt.Fprintln(w, a.id, a.at)
		}
	}
	fmt.Fprintln(w, "cpu", cpu.Nanoseconds())
	_ = w.Flush()
}

// eventReader returns the id of the pet of each event a subscriber reads.
type eventReader interface {
	next() (int64, error)
}

// wsSubscribe opens a subscriber of BenchmarkPetAddedLatency over WebSocket.
func wsSubscribe(addr, key string) (net.Conn, eventReader, error) {
	c, br, err := rawSubscribeReader(addr, key)
	if err != nil {
		return nil, nil, err
	}
	return c, &wsReader{br: br}, nil
}

// wsReader reads a server's WebSocket frames into one buffer.
type wsReader struct {
	br  *bufio.Reader
	buf []byte
}

func (r *wsReader) next() (int64, error) {
	for {
		h0, err := r.br.ReadByte()
		if err != nil {
			return 0, err
		}
		h1, err := r.br.ReadByte()
		if err != nil {
			return 0, err
		}
		n := int(h1 & 0x7f)
		switch n {
		case 126:
			var e [2]byte
			if _, err := io.ReadFull(r.br, e[:]); err != nil {
				return 0, err
			}
			n = int(binary.BigEndian.Uint16(e[:]))
		case 127:
			return 0, fmt.Errorf("frame too long")
		}
		if cap(r.buf) < n {
			r.buf = make([]byte, n)
		}
		r.buf = r.buf[:n]
		if _, err := io.ReadFull(r.br, r.buf); err != nil {
			return 0, err
		}
		if h0 != 0x81 { // a text message in one frame
			continue
		}
		if id, ok := petIDOf(r.buf); ok {
			return id, nil
		}
	}
}

// sseSubscribe opens a subscriber of BenchmarkPetAddedLatency over SSE.
func sseSubscribe(addr, key string) (net.Conn, eventReader, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(c, "POST /v1/graphql HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n"+
		"Accept: text/event-stream\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		addr, key, len(latencyQuery), latencyQuery)
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		c.Close()
		return nil, nil, fmt.Errorf("SSE answer: %d %v", resp.StatusCode, resp.Header)
	}
	return c, &sseReader{lines: bufio.NewReaderSize(resp.Body, 512)}, nil
}

// sseReader reads the events of an SSE body (net/http's reader of its chunks) line by line.
type sseReader struct {
	lines *bufio.Reader
}

var dataField = []byte("data: ")

func (r *sseReader) next() (int64, error) {
	var (
		id int64
		ok bool
	)
	for {
		line, err := r.lines.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if data, found := bytes.CutPrefix(line, dataField); found {
			id, ok = petIDOf(data)
		} else if len(line) == 1 && ok { // the blank line that ends an event
			return id, nil
		}
	}
}

// petIDOf returns the pet id of a petAdded event's JSON, whatever wraps it.
func petIDOf(msg []byte) (int64, bool) {
	const pet, id = `"pet":{`, `"id":"`
	i := bytes.Index(msg, []byte(pet))
	if i < 0 {
		return 0, false
	}
	msg = msg[i+len(pet):]
	if i = bytes.Index(msg, []byte(id)); i < 0 {
		return 0, false
	}
	var n int64
	for _, c := range msg[i+len(id):] {
		if c == '"' {
			return n, true
		}
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return 0, false
}

// cpuTime returns the CPU time the process used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
