package observe_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"petstore/observe"
)

// syncBuffer is a bytes.Buffer safe for the LogWriter's timer goroutine.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLogWriterBatchesAndKeepsOrder(t *testing.T) {
	out := &syncBuffer{}
	w := observe.NewLogWriter(out, time.Hour)
	var want strings.Builder
	for i := range 1000 {
		line := strings.Repeat("x", i%200) + "\n"
		if i == 500 {
			line = strings.Repeat("y", 40<<10) + "\n" // longer than the buffer
		}
		want.WriteString(line)
		if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != want.String() {
		t.Fatalf("got %d bytes, want %d, in the order written", len(got), want.Len())
	}
	if out.writes > 10 {
		t.Errorf("1,000 lines (100 KiB) took %d writes; want a handful", out.writes)
	}
}

func TestLogWriterFlushesOnTime(t *testing.T) {
	out := &syncBuffer{}
	w := observe.NewLogWriter(out, 10*time.Millisecond)
	_, _ = w.Write([]byte("one\n"))
	if out.String() != "" {
		t.Fatalf("written at once: %q", out.String())
	}
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "one\n" {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s got %q; want the line flushed after 10 ms", out.String())
		}
		time.Sleep(time.Millisecond)
	}
}

func TestLogWriterCloseFlushesThenWritesThrough(t *testing.T) {
	out := &syncBuffer{}
	w := observe.NewLogWriter(out, time.Hour)
	_, _ = w.Write([]byte("before\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "before\n" {
		t.Fatalf("after Close got %q", got)
	}
	_, _ = w.Write([]byte("after\n"))
	if got := out.String(); got != "before\nafter\n" {
		t.Fatalf("a line after Close: got %q; want it written at once", got)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestLogWriterReportsWriteErrors(t *testing.T) {
	w := observe.NewLogWriter(failingWriter{}, time.Hour)
	_, _ = w.Write([]byte("line\n"))
	if err := w.Flush(); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("Flush: got %v; want the writer's error", err)
	}
	if _, err := w.Write([]byte("more\n")); err == nil {
		t.Errorf("Write after a failed flush: got no error")
	}
}
