package webasset

import (
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
)

// countingFS counts the bytes read from its files.
type countingFS struct {
	fstest.MapFS
	read *atomic.Int64
}

func (c countingFS) Open(name string) (fs.File, error) {
	f, err := c.MapFS.Open(name)
	if err != nil {
		return nil, err
	}
	if rs, ok := f.(readSeekCloser); ok {
		return countingFile{f, rs, c.read}, nil
	}
	return f, nil
}

type countingFile struct {
	fs.File
	rs   readSeekCloser
	read *atomic.Int64
}

func (f countingFile) Read(p []byte) (int, error) {
	n, err := f.rs.Read(p)
	f.read.Add(int64(n))
	return n, err
}

func (f countingFile) Seek(offset int64, whence int) (int64, error) {
	return f.rs.Seek(offset, whence)
}

var script = strings.Repeat("console.log('a pet');\n", 1000)

func testFiles(read *atomic.Int64) countingFS {
	return countingFS{fstest.MapFS{
		"page.html":           {Data: []byte("<html>")},
		"vendor/lib/lib.js":   {Data: []byte(script)},
		"static/ours.css":     {Data: []byte("body { margin: 0 }")},
		"vendor/lib/notes.md": {Data: []byte("not served")},
	}, read}
}

// TestLoadReadsNothing: an instance whose pages nobody opens never reads the assets (the REST
// reference's Scalar build is 4.3 MB); the first page names them after their content.
func TestLoadReadsNothing(t *testing.T) {
	var read atomic.Int64
	s := Load(testFiles(&read), "test")
	if n := read.Load(); n != 0 {
		t.Fatalf("Load read %d bytes of the assets; want none", n)
	}
	u, err := s.URL("page", "vendor/lib/lib.js")
	if err != nil || !strings.HasPrefix(u, "page/assets/lib.") || !strings.HasSuffix(u, ".js") || len(u) != len("page/assets/lib.0123456789.js") {
		t.Fatalf("URL: got %q, %v; want page/assets/lib.HASH.js", u, err)
	}
	if read.Load() == 0 {
		t.Error("the public name was made without reading the asset")
	}
	if _, err := s.URL("page", "vendor/lib/other.js"); err == nil {
		t.Error("URL of a path that is not embedded: got no error")
	}
}

// TestServe: the body, its headers, gzip when asked for, and a 404 for any other name.
func TestServe(t *testing.T) {
	var read atomic.Int64
	s := Load(testFiles(&read), "test")
	u, _ := s.URL("page", "vendor/lib/lib.js")
	name := strings.TrimPrefix(u, "page/assets/")
	serve := func(name string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/page/assets/"+name, nil)
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		s.Serve(w, r, name)
		return w
	}
	plain := serve(name)
	if plain.Code != http.StatusOK || plain.Body.String() != script || plain.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
		t.Fatalf("GET %s: got %d %q, %d bytes; want 200, the script", name, plain.Code, plain.Header().Get("Content-Type"), plain.Body.Len())
	}
	etag := plain.Header().Get("ETag")
	if !strings.Contains(name, strings.Trim(etag, `"`)) {
		t.Errorf("ETag %s is not the hash in the name %s", etag, name)
	}
	zipped := serve(name, "Accept-Encoding", "gzip")
	if zipped.Header().Get("Content-Encoding") != "gzip" || zipped.Header().Get("ETag") == etag {
		t.Fatalf("gzip asked for: got Content-Encoding %q, ETag %q", zipped.Header().Get("Content-Encoding"), zipped.Header().Get("ETag"))
	}
	zr, err := gzip.NewReader(zipped.Body)
	if err != nil {
		t.Fatal(err)
	}
	if body, _ := io.ReadAll(zr); string(body) != script {
		t.Errorf("gunzipped: %d bytes; want the script's %d", len(body), len(script))
	}
	if got := serve(name, "Range", "bytes=0-6"); got.Code != http.StatusPartialContent || got.Body.String() != script[:7] {
		t.Errorf("a range: got %d %q; want 206 %q", got.Code, got.Body.String(), script[:7])
	}
	if got := serve("lib.0000000000.js"); got.Code != http.StatusNotFound {
		t.Errorf("another hash: got %d; want 404", got.Code)
	}
}

// TestLoadRefusesSameFileName: two assets of one file name in two folders are a build mistake.
func TestLoadRefusesSameFileName(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Load of two lib.js: no panic")
		}
	}()
	Load(fstest.MapFS{"a/lib.js": {Data: []byte("1")}, "b/lib.js": {Data: []byte("2")}}, "test")
}
