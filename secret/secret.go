// Package secret keeps the passwords of configured addresses (PETSTORE_DB,
// PETSTORE_REDIS_URL) out of logs and errors: Mask hides them in any address, parsable or
// not, and ParseURL parses an address without ever echoing it in its error.
package secret

import (
	"errors"
	"net/url"
	"regexp"
	"strings"
)

// Masked is what stands for a password in a masked address.
const Masked = "***"

// scheme matches the scheme of an address, with the // of an authority when there is one.
var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:(//)?`)

// passwordParam matches a password-like parameter and its value, up to the next separator.
var passwordParam = regexp.MustCompile(`(?i)((?:^|[?&;,\s])(?:password|passwd|pwd|pass|secret|token)=)[^&;,\s]*`)

// Mask returns address with whatever may be a password replaced by Masked, whether or not the
// address parses: the user information's password, from the first ':' after the scheme to the
// last '@' of the address (a password may hold '/', '?', '#', '%' or '@', so where the host
// begins is not certain: when in doubt, more is masked), and the value of every
// password-like parameter (password=, passwd=, pwd=, pass=, secret=, token=).
func Mask(address string) string {
	start := len(scheme.FindString(address))
	out := address
	if at := strings.LastIndexByte(address[start:], '@'); at >= 0 {
		user, _, hasPassword := strings.Cut(address[start:start+at], ":")
		if hasPassword {
			out = address[:start] + user + ":" + Masked + address[start+at:]
		}
	}
	return passwordParam.ReplaceAllString(out, "${1}"+Masked)
}

// ErrUnparsable is the error of ParseURL. It says nothing of the address itself.
var ErrUnparsable = errors.New("does not parse as a URL with its user name and password before the host " +
	"(scheme://USER:PASS@HOST...): percent-encode / ? # @ % in them as %2F %3F %23 %40 %25")

// ParseURL parses an address that may carry a password. It returns ErrUnparsable, never
// url.Parse's error (which quotes the address, password included), when the address does not
// parse, or when it parses with an '@' or a fragment beyond the user information: the mark of
// a password with an unescaped '/', '?', '#' or '@', part of which would otherwise be taken for
// the host, the path, the query or the fragment, and sent to a server or quoted in its errors.
func ParseURL(address string) (*url.URL, error) {
	u, err := url.Parse(address)
	if err != nil || u.Fragment != "" || strings.ContainsRune(u.Opaque+u.Host+u.Path+u.RawQuery, '@') {
		return nil, ErrUnparsable
	}
	return u, nil
}
