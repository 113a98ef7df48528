package observe

import (
	"io"
	"sync"
	"time"
)

// LogWriter buffers log lines on their way to a slow writer such as a pipe or a terminal: one
// write system call per request line cost a loaded instance some 3% of its CPU. Lines reach
// the writer when the buffer is full, at the latest flushEvery after they were written, and on
// Flush and Close. A line longer than the buffer is written at once, after what the buffer
// holds, so lines keep their order.
type LogWriter struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	err   error         // the first write error; later lines are dropped
	timer *time.Timer   // pending flush; nil when the buffer is empty
	every time.Duration // how long a line may wait
	done  bool          // closed: write through
}

// logBufferSize is how much LogWriter holds before it writes.
const logBufferSize = 32 << 10

// NewLogWriter returns a LogWriter writing to w at least every flushEvery.
func NewLogWriter(w io.Writer, flushEvery time.Duration) *LogWriter {
	return &LogWriter{w: w, buf: make([]byte, 0, logBufferSize), every: flushEvery}
}

// Write buffers p, which log/slog hands over a whole line at a time. It never blocks on a
// slow writer unless the buffer is full. It reports the first error of the underlying writer.
func (l *LogWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return 0, l.err
	}
	if l.done || len(p) > cap(l.buf) {
		l.flushLocked()
		if l.err == nil {
			_, l.err = l.w.Write(p)
		}
		return len(p), l.err
	}
	if len(l.buf)+len(p) > cap(l.buf) {
		l.flushLocked()
	}
	l.buf = append(l.buf, p...)
	if l.timer == nil {
		l.timer = time.AfterFunc(l.every, func() { _ = l.Flush() })
	}
	return len(p), l.err
}

// Flush writes what the buffer holds.
func (l *LogWriter) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	return l.err
}

// Close flushes the buffer; later lines are written through, unbuffered.
func (l *LogWriter) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	l.done = true
	return l.err
}

func (l *LogWriter) flushLocked() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	if len(l.buf) > 0 && l.err == nil {
		_, l.err = l.w.Write(l.buf)
	}
	l.buf = l.buf[:0]
}
