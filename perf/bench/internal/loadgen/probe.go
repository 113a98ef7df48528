package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Answer is one whole response, read by Probe.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Probe sends the first request of b to addr on a connection of its own and returns the whole
// answer.
func Probe(ctx context.Context, addr string, b Builder) (Answer, error) {
	d := net.Dialer{Timeout: dialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Answer{}, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(ioTimeout))
	if _, err := conn.Write(b(nil, 0, 0)); err != nil {
		return Answer{}, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return Answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return Answer{Status: resp.StatusCode, Header: resp.Header, Body: body}, err
}

// Check reports whether a is a plausible success of the named workload: the right status and
// a body of the right shape (for GraphQL, data and no errors).
func Check(workload string, a Answer) error {
	want, shape := http.StatusOK, byte('[')
	switch workload {
	case Post:
		want, shape = http.StatusCreated, '{'
	case Get, GraphQL, GraphQLConn:
		shape = '{'
	case Mix:
		return nil
	}
	body := bytes.TrimSpace(a.Body)
	if a.Status != want || len(body) == 0 || body[0] != shape {
		return fmt.Errorf("%s: got %d %.200s; want %d and a JSON %c...", workload, a.Status, body, want, shape)
	}
	if workload == GraphQL || workload == GraphQLConn {
		var gql struct {
			Data   map[string]json.RawMessage
			Errors []json.RawMessage
		}
		field := map[string]string{GraphQL: "pets", GraphQLConn: "petsConnection"}[workload]
		if err := json.Unmarshal(body, &gql); err != nil || gql.Data[field] == nil || len(gql.Errors) > 0 {
			return fmt.Errorf("%s: got %.200s; want data.%s and no errors", workload, body, field)
		}
	}
	return nil
}

// FindPage returns the path of page number page (1 is the first) of GET /v1/pets?limit=limit,
// found by following the Link rel="next" headers from the first page.
func FindPage(ctx context.Context, addr string, p Params, limit, page int) (string, error) {
	path, read, err := Walk(ctx, addr, p, "/v1/pets?limit="+strconv.Itoa(limit), page-1)
	switch {
	case err != nil:
		return "", err
	case path == "":
		return "", fmt.Errorf("GET /v1/pets?limit=%d has %d pages; want %d", limit, read, page)
	}
	return path, nil
}

// Walk reads up to n pages of a listing, from path on, following the Link rel="next" headers,
// and returns the path of the page after the last it read ("" past the listing's last page)
// and how many it read.
func Walk(ctx context.Context, addr string, p Params, path string, n int) (next string, read int, err error) {
	for ; read < n && path != ""; read++ {
		a, err := Probe(ctx, addr, fixed(p, "GET", path, ""))
		if err != nil {
			return "", read, err
		}
		if a.Status != http.StatusOK {
			return "", read, fmt.Errorf("%s: got status %d %.200s", path, a.Status, a.Body)
		}
		path = nextLink(a.Header.Values("Link"))
	}
	return path, read, nil
}

// nextLink returns the target of the rel="next" link among Link header values, or "".
func nextLink(values []string) string {
	for _, v := range values {
		for link := range strings.SplitSeq(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(link), ";")
			if ok && strings.Contains(params, `rel="next"`) {
				return strings.Trim(strings.TrimSpace(target), "<>")
			}
		}
	}
	return ""
}
