package loadgen

import (
	"fmt"
	"strconv"
)

// The workloads of the benchmark, by name.
const (
	List     = "list"      // GET /v1/pets?limit=20
	ListSold = "list-sold" // GET /v1/pets?status=sold&limit=100
	Post     = "post"      // POST /v1/pets, a unique name each time
	GraphQL  = "graphql"   // POST /v1/graphql { pets(limit:20) { id name categoryId status } }
	List100  = "list-100"  // GET /v1/pets?limit=100
	// GraphQLConn is POST /v1/graphql of petsConnection(first:100): the page of List100.
	GraphQLConn = "graphql-conn"
	Get         = "get"  // GET /v1/pets/{petId} over a range of ids
	Page        = "page" // GET of one fixed page path (Params.Path), found with FindPage
	Mix         = "mix"  // list, list-sold, graphql, post and get in turn (service only)
)

// Workloads lists every workload name.
var Workloads = []string{List, ListSold, Post, GraphQL, List100, GraphQLConn, Get, Page, Mix}

// Paths and bodies of the workloads.
const (
	ListPath     = "/v1/pets?limit=20"
	ListSoldPath = "/v1/pets?status=sold&limit=100"
	GraphQLBody  = `{"query":"{ pets(limit:20) { id name categoryId status } }"}`
	List100Path  = "/v1/pets?limit=100"
	// GraphQLConnBody asks for the page of List100Path as a front end pages: each pet with its
	// cursor, and whether more follow.
	GraphQLConnBody = `{"query":"{ petsConnection(first:100) { edges { cursor node { id name categoryId status } } pageInfo { hasNextPage endCursor } } }"}`
)

// Params are what the workloads need besides the server's address and key.
type Params struct {
	Host  string // the server's host:port, sent as the Host header
	Key   string // API key, sent as a bearer token
	Tag   string // makes POSTed names unique across runs (post, mix)
	MinID int64  // ids for get (and mix): MinID..MaxID
	MaxID int64
	Path  string // the page path of the page workload
}

// Build returns the Builder of the named workload.
func Build(name string, p Params) (Builder, error) {
	switch name {
	case List:
		return fixed(p, "GET", ListPath, ""), nil
	case ListSold:
		return fixed(p, "GET", ListSoldPath, ""), nil
	case GraphQL:
		return fixed(p, "POST", "/v1/graphql", GraphQLBody), nil
	case List100:
		return fixed(p, "GET", List100Path, ""), nil
	case GraphQLConn:
		return fixed(p, "POST", "/v1/graphql", GraphQLConnBody), nil
	case Page:
		if p.Path == "" {
			return nil, fmt.Errorf("workload %s needs a page path", name)
		}
		return fixed(p, "GET", p.Path, ""), nil
	case Post:
		return createPet(p), nil
	case Get:
		if p.MinID < 1 || p.MaxID < p.MinID {
			return nil, fmt.Errorf("workload %s needs an id range; got %d..%d", name, p.MinID, p.MaxID)
		}
		return getPet(p), nil
	case Mix:
		return mix(p)
	}
	return nil, fmt.Errorf("unknown workload %q; want one of %v", name, Workloads)
}

// fixed returns a Builder of the same request every time.
func fixed(p Params, method, path, body string) Builder {
	req := appendHead(nil, p, method, path, body != "", len(body))
	req = append(req, body...)
	return func(buf []byte, _, _ int) []byte { return append(buf, req...) }
}

// createPet returns a Builder of POST /v1/pets with a name no other request of any run shares.
func createPet(p Params) Builder {
	return func(buf []byte, worker, seq int) []byte {
		var body [128]byte
		b := append(body[:0], `{"name":"bench-`...)
		b = append(b, p.Tag...)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(worker), 10)
		b = append(b, '-')
		b = strconv.AppendInt(b, int64(seq), 10)
		b = append(b, `","categoryId":`...)
		b = strconv.AppendInt(b, int64(seq%50+1), 10)
		b = append(b, `,"status":"available"}`...)
		buf = appendHead(buf, p, "POST", "/v1/pets", true, len(b))
		return append(buf, b...)
	}
}

// getPet returns a Builder of GET /v1/pets/{petId}, walking the id range from a different
// place for each worker.
func getPet(p Params) Builder {
	span := p.MaxID - p.MinID + 1
	return func(buf []byte, worker, seq int) []byte {
		id := p.MinID + (int64(worker)*7919+int64(seq)*104729)%span
		return appendHead(buf, p, "GET", "/v1/pets/"+strconv.FormatInt(id, 10), false, 0)
	}
}

// mix returns a Builder that sends list, list-sold, graphql, post and get in turn.
func mix(p Params) (Builder, error) {
	var all []Builder
	for _, name := range []string{List, ListSold, GraphQL, Post, Get} {
		b, err := Build(name, p)
		if err != nil {
			return nil, err
		}
		all = append(all, b)
	}
	return func(buf []byte, worker, seq int) []byte {
		return all[(worker+seq)%len(all)](buf, worker, seq)
	}, nil
}

// appendHead appends the request line and headers; a request with a body is JSON.
func appendHead(buf []byte, p Params, method, path string, hasBody bool, n int) []byte {
	buf = append(buf, method...)
	buf = append(buf, ' ')
	buf = append(buf, path...)
	buf = append(buf, " HTTP/1.1\r\nHost: "...)
	buf = append(buf, p.Host...)
	buf = append(buf, "\r\nUser-Agent: petstore-bench\r\nAccept: application/json\r\nAuthorization: Bearer "...)
	buf = append(buf, p.Key...)
	if hasBody {
		buf = append(buf, "\r\nContent-Type: application/json\r\nContent-Length: "...)
		buf = strconv.AppendInt(buf, int64(n), 10)
	}
	return append(buf, "\r\n\r\n"...)
}
