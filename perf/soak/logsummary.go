package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"os"
	"slices"
)

// logLine is the part of one of the service's JSON log lines that the summary reads.
type logLine struct {
	Level string `json:"level"`
	Msg   string `json:"msg"`
	Err   string `json:"err"`
}

// logGroup counts the log lines of one level, message and error.
type logGroup struct {
	level, msg, err string
	n               int
}

// summarizeLog groups the WARN and ERROR lines of the service log at path by level, message
// and error, most frequent first.
func summarizeLog(path string) ([]logGroup, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	groups := map[logLine]*logGroup{}
	lines := bufio.NewScanner(f)
	lines.Buffer(make([]byte, 64<<10), 4<<20)
	for lines.Scan() {
		var l logLine
		if json.Unmarshal(lines.Bytes(), &l) != nil || (l.Level != "WARN" && l.Level != "ERROR") {
			continue // INFO and DEBUG, and the plain lines on stdout
		}
		if groups[l] == nil {
			groups[l] = &logGroup{level: l.Level, msg: l.Msg, err: l.Err}
		}
		groups[l].n++
	}
	var out []logGroup
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b logGroup) int {
		return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.level+a.msg+a.err, b.level+b.msg+b.err))
	})
	return out, lines.Err()
}
