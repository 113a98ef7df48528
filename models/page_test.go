package models

import (
	"encoding/base64"
	"math"
	"strconv"
	"testing"
)

// TestCursorRoundTrip checks that EncodeCursor writes the encoding of "pet:v1:ID", which
// DecodeCursor reads back, for ids up to the largest.
func TestCursorRoundTrip(t *testing.T) {
	for _, id := range []int64{0, 1, 9, 10, 20, 99, 100, 12345, 1 << 31, math.MaxInt64} {
		cursor := EncodeCursor(id)
		if want := base64.RawURLEncoding.EncodeToString([]byte("pet:v1:" + strconv.FormatInt(id, 10))); cursor != want {
			t.Errorf("EncodeCursor(%d): got %q; want %q", id, cursor, want)
		}
		if got, err := DecodeCursor(&cursor); err != nil || got != id {
			t.Errorf("DecodeCursor(EncodeCursor(%d)): got %d, %v", id, got, err)
		}
	}
}
