package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"math/big"
	"strings"
)

// Key prefixes: live keys for production, test keys for staging and development. The fixed
// prefix lets secret scanners find leaked keys.
const (
	LivePrefix = "petstore_live_"
	TestPrefix = "petstore_test_"
)

const (
	base62      = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	randomLen   = 32 // 32 base-62 characters: 190 bits
	checksumLen = 6  // CRC-32 of prefix and random part, in base 62
	hintRandom  = 4  // random characters kept in a key's hint
	keyBodyLen  = randomLen + checksumLen
)

// PrefixFor returns the key prefix of an environment: live keys for production only.
func PrefixFor(env string) string {
	if env == "production" {
		return LivePrefix
	}
	return TestPrefix
}

// NewKey returns a new random key with prefix: the prefix, 32 random base-62 characters and a
// 6-character checksum.
func NewKey(prefix string) string {
	var b strings.Builder
	b.Grow(len(prefix) + keyBodyLen)
	b.WriteString(prefix)
	limit := big.NewInt(int64(len(base62)))
	for range randomLen {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			panic(err) // crypto/rand never fails on supported platforms
		}
		b.WriteByte(base62[n.Int64()])
	}
	b.WriteString(checksum(b.String()))
	return b.String()
}

// WellFormed reports whether key has prefix, the right length, base-62 characters and a
// matching checksum. It reads no database.
func WellFormed(key, prefix string) bool {
	body, ok := strings.CutPrefix(key, prefix)
	if !ok || len(body) != keyBodyLen {
		return false
	}
	for i := range len(body) {
		if !isBase62[body[i]] {
			return false
		}
	}
	sum := checksumOf(key[:len(key)-checksumLen])
	return string(sum[:]) == body[randomLen:]
}

// isBase62 reports the bytes that are base-62 digits.
var isBase62 = func() (t [256]bool) {
	for i := range len(base62) {
		t[base62[i]] = true
	}
	return t
}()

// Hash returns the hex SHA-256 of key: the only form in which keys are stored.
func Hash(key string) string {
	text := hashText(key)
	return string(text[:])
}

// hashText returns Hash(key) as bytes, which need no allocation.
func hashText(key string) [2 * sha256.Size]byte {
	sum := sha256.Sum256([]byte(key))
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return text
}

// Hint returns the prefix and first random characters of key, to recognise it in a list.
func Hint(key, prefix string) string {
	return key[:len(prefix)+hintRandom] + "..."
}

// checksum encodes the CRC-32 of s in checksumLen base-62 characters.
func checksum(s string) string {
	sum := checksumOf(s)
	return string(sum[:])
}

// checksumOf is checksum without the string.
func checksumOf(s string) (out [checksumLen]byte) {
	c := crc32.ChecksumIEEE([]byte(s))
	for i := checksumLen - 1; i >= 0; i-- {
		out[i] = base62[c%62]
		c /= 62
	}
	return out
}
