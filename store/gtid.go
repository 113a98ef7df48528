package store

import (
	"fmt"
	"strconv"
	"strings"
)

// gtidPos is a MariaDB GTID position (@@gtid_binlog_pos, @@gtid_slave_pos): for each
// replication domain, the sequence number of the last transaction. Within a domain sequence
// numbers grow in binlog order, so a server whose position holds at least p's number in every
// domain of p has applied every transaction that p covers.
type gtidPos map[uint64]uint64

// parseGTIDPos parses a position such as "0-1-42,1-2-7" (domain-server-sequence); "" is the
// empty position.
func parseGTIDPos(s string) (gtidPos, error) {
	p := gtidPos{}
	for _, g := range strings.Split(s, ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		parts := strings.Split(g, "-")
		if len(parts) != 3 {
			return nil, fmt.Errorf("store: bad GTID %q", g)
		}
		domain, err1 := strconv.ParseUint(parts[0], 10, 32)
		_, err2 := strconv.ParseUint(parts[1], 10, 32)
		seq, err3 := strconv.ParseUint(parts[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("store: bad GTID %q", g)
		}
		p[domain] = max(p[domain], seq)
	}
	return p, nil
}

// reached reports whether a server at position p has applied every transaction of target.
func (p gtidPos) reached(target gtidPos) bool {
	for domain, seq := range target {
		if p[domain] < seq {
			return false
		}
	}
	return true
}
