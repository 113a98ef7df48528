package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"time"
)

// secretPrefix starts every signing secret, as the Standard Webhooks specification writes
// them: the rest is the base64 of the key's bytes.
const secretPrefix = "whsec_"

// secretBytes is the length of a new signing key: 32 random bytes, as long as its HMAC-SHA256
// output, within the specification's 24 to 64.
const secretBytes = 32

// NewSecret returns a new signing secret, whsec_ and the base64 of 32 random bytes.
func NewSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return secretPrefix + base64.StdEncoding.EncodeToString(b)
}

// signer signs the deliveries of one endpoint with its secret, and with the secret a rotation
// replaced while its grace period lasts.
type signer struct{ keys [][]byte }

// newSigner returns the signer of the secrets, the current one first; an empty secret is
// skipped.
func newSigner(secrets ...string) (signer, error) {
	var s signer
	for _, secret := range secrets {
		if secret == "" {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
		if err != nil {
			return s, errors.New("webhooks: a signing secret is not base64")
		}
		s.keys = append(s.keys, key)
	}
	return s, nil
}

// sign returns the webhook-signature header of a delivery: for each key, v1 and the base64
// HMAC-SHA256 of "msgID.timestamp.body", space-separated, as the Standard Webhooks
// specification defines it, so that a receiver verifies it with any of its libraries.
func (s signer) sign(msgID string, at time.Time, body []byte) string {
	ts := strconv.FormatInt(at.Unix(), 10)
	var b strings.Builder
	for i, key := range s.keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(msgID))
		mac.Write([]byte{'.'})
		mac.Write([]byte(ts))
		mac.Write([]byte{'.'})
		mac.Write(body)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}
