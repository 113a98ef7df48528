package main

import (
	"net/http"
	"strconv"
	"sync"
	"unicode/utf8"

	"petstore/apierr"
	"petstore/auth"
)

// buffers recycles the buffers answers are written into.
var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 8<<10); return &b }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

// putBuffer returns buf to the pool unless it grew past 64 KiB.
func putBuffer(buf *[]byte) {
	if cap(*buf) <= 64<<10 {
		*buf = (*buf)[:0]
		buffers.Put(buf)
	}
}

// Header values set without canonicalising their names again.
var (
	jsonType = []string{"application/json; charset=utf-8"}
	nosniff  = []string{"nosniff"}
)

// writeJSON writes body with status as application/json.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError writes the contract's Error body.
func writeError(w http.ResponseWriter, status int, code, message string) {
	b := append([]byte(`{"code":`), strconv.Quote(code)...)
	b = appendString(append(b, `,"message":`...), []byte(message))
	b = strconv.AppendInt(append(b, `,"status":`...), int64(status), 10)
	w.Header()["X-Content-Type-Options"] = nosniff
	writeJSON(w, status, append(b, '}'))
}

// writeAuthError answers a request whose key the Authenticator refused, as the service does.
func writeAuthError(w http.ResponseWriter, err error) {
	e := apierr.From(err)
	if e.Code == apierr.Unauthorized {
		w.Header().Set("WWW-Authenticate", auth.Challenge(err))
	}
	writeError(w, e.Status(), string(e.Code), e.Message)
}

// appendPet appends a Pet object; a nil status is left out.
func appendPet(b []byte, id int64, name []byte, category int64, status []byte) []byte {
	b = strconv.AppendInt(append(b, `{"id":`...), id, 10)
	b = appendString(append(b, `,"name":`...), name)
	b = strconv.AppendInt(append(b, `,"categoryId":`...), category, 10)
	if status != nil {
		b = appendString(append(b, `,"status":`...), status)
	}
	return append(b, '}')
}

// appendPetString is appendPet into buf for values held as a string and an optional status
// (nil or a string).
func appendPetString(buf *[]byte, id int64, name string, category int64, status any) *[]byte {
	var st []byte
	if s, ok := status.(string); ok {
		st = []byte(s)
	}
	*buf = appendPet((*buf)[:0], id, []byte(name), category, st)
	return buf
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Quotes, backslashes and control characters are
// escaped, and so are U+2028 and U+2029 (as encoding/json does, for JavaScript); invalid UTF-8
// becomes U+FFFD; everything else is copied as is. (strconv.AppendQuote would be shorter but
// writes Go syntax, such as \x01, that is not JSON.)
func appendString(b, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = appendEscapedByte(append(b, s[start:i]...), c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendEscapedByte appends the JSON escape of an ASCII quote, backslash or control character.
func appendEscapedByte(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
