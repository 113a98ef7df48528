package loadgen

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// errMalformed is a response this reader cannot parse.
var errMalformed = errors.New("loadgen: malformed HTTP response")

// readResponse reads one HTTP/1.1 response from r, discarding its body, and returns its status
// and whether the server will close the connection. Bodies come with Content-Length or chunked
// transfer coding; one with neither runs to the end of the connection.
func readResponse(r *bufio.Reader) (status int, closeConn bool, err error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, false, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, false, fmt.Errorf("%w: status line %q", errMalformed, line)
	}
	h, err := readHeader(r)
	if err != nil {
		return 0, false, err
	}
	switch {
	case h.chunked:
		err = discardChunked(r)
	case h.length >= 0:
		_, err = r.Discard(h.length)
	default:
		_, err = io.Copy(io.Discard, r)
		h.closeConn = true
	}
	return status, h.closeConn, err
}

// header is what readResponse needs of a response's header block.
type header struct {
	length    int // Content-Length, or -1
	chunked   bool
	closeConn bool
}

// readHeader reads the header lines up to the blank line that ends them.
func readHeader(r *bufio.Reader) (header, error) {
	h := header{length: -1}
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return h, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			return h, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return h, fmt.Errorf("%w: header line %q", errMalformed, line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if h.length, err = strconv.Atoi(string(value)); err != nil || h.length < 0 {
				return h, fmt.Errorf("%w: Content-Length %q", errMalformed, value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			h.chunked = bytes.EqualFold(value, []byte("chunked"))
		case bytes.EqualFold(name, []byte("Connection")):
			h.closeConn = bytes.EqualFold(value, []byte("close"))
		}
	}
}

// discardChunked reads and drops a chunked body and its trailer.
func discardChunked(r *bufio.Reader) error {
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return err
		}
		sizeText, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeText)), 16, 64)
		if err != nil || size < 0 {
			return fmt.Errorf("%w: chunk size %q", errMalformed, line)
		}
		if size == 0 {
			_, err := readHeader(r) // the trailer, up to the final blank line
			return err
		}
		if _, err := r.Discard(int(size) + 2); err != nil { // the chunk and its CRLF
			return err
		}
	}
}
