// Package webasset serves scripts and style sheets embedded in the binary under names that
// carry a hash of their content, so that browsers may cache them for good: a new build gets new
// names. The playground and the REST reference page serve their vendored builds with it.
package webasset

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// An asset is one embedded script or style sheet. Its bytes stay where the binary embeds them,
// read when served and never copied onto the heap, where they would be resident for the life
// of the process whether or not anyone opens the pages (the REST reference's Scalar build
// alone is 4.3 MB).
type asset struct {
	path  string // where the Set's files hold it: vendor/graphiql/graphiql.min.js
	ctype string
	name  string // the public name, graphiql.min.0123456789.js; set by Set.index
	etag  string // set by Set.index

	gzipOnce sync.Once
	gzipped  []byte // body gzipped, or nil when that saves nothing
}

// Set indexes embedded scripts and style sheets both by public name (for serving) and by
// embedded path (for page templates). A Set may be used by concurrent requests. The public
// names are worked out on the Set's first use (its page or an asset asked for), so that an
// instance whose pages nobody opens never reads the assets.
type Set struct {
	owner  string // names the page in messages: "playground"
	files  fs.FS
	byPath map[string]*asset

	indexOnce sync.Once
	byName    map[string]*asset // set by index
}

// contentTypes are the types of the assets, by extension (not from package mime, whose table
// the host's mime.types can change).
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// readSeekCloser is what Load requires of each asset's file, as an embed.FS's files are.
type readSeekCloser interface {
	io.ReadSeeker
	io.Closer
}

// Load finds every .js and .css file of files; owner names the page in messages. It panics
// when files cannot be read or opened for seeking, or when two assets have the same file name
// (their public names could then be the same): all are build mistakes.
func Load(files fs.FS, owner string) *Set {
	s := &Set{owner: owner, files: files, byPath: map[string]*asset{}}
	base := map[string]string{}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		ext := path.Ext(p)
		if err != nil || d.IsDir() || contentTypes[ext] == "" {
			return err
		}
		if other, dup := base[path.Base(p)]; dup {
			return errors.New(p + " and " + other + " have the same file name")
		}
		base[path.Base(p)] = p
		f, err := s.open(p)
		if err != nil {
			return err
		}
		_ = f.Close()
		s.byPath[p] = &asset{path: p, ctype: contentTypes[ext]}
		return nil
	})
	if err != nil {
		panic(owner + ": reading the embedded assets: " + err.Error())
	}
	return s
}

// open opens the file at p for reading and seeking.
func (s *Set) open(p string) (readSeekCloser, error) {
	f, err := s.files.Open(p)
	if err != nil {
		return nil, err
	}
	rs, ok := f.(readSeekCloser)
	if !ok {
		_ = f.Close()
		return nil, errors.New(p + " cannot seek")
	}
	return rs, nil
}

// copyTo writes the body of as to w and returns its length.
func (s *Set) copyTo(w io.Writer, as *asset) (int64, error) {
	f, err := s.open(as.path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return io.Copy(w, f)
}

// index names every asset after a hash of its content, once. Load opened every file, so a
// failure to read one now is a broken build, and panics.
func (s *Set) index() {
	s.indexOnce.Do(func() {
		s.byName = make(map[string]*asset, len(s.byPath))
		for p, as := range s.byPath {
			h := sha256.New()
			if _, err := s.copyTo(h, as); err != nil {
				panic(s.owner + ": reading the embedded assets: " + err.Error())
			}
			hash := hex.EncodeToString(h.Sum(nil)[:5])
			ext := path.Ext(p)
			as.name = strings.TrimSuffix(path.Base(p), ext) + "." + hash + ext
			as.etag = `"` + hash + `"`
			s.byName[as.name] = as
		}
	})
}

// URL returns the address of the asset embedded at p, relative to the page, whose last path
// segment is page, or an error for a path that is not embedded (page tests catch it).
func (s *Set) URL(page, p string) (string, error) {
	as, ok := s.byPath[p]
	if !ok {
		return "", errors.New(s.owner + ": the page refers to " + p + ", which is not embedded")
	}
	s.index()
	return page + "/assets/" + as.name, nil
}

// ServePage answers the requests of a page and its assets: GET and HEAD only (405 with Allow
// otherwise), the asset named after the last /assets/ of the path, and anything else with
// page. what names the page in the 405's message.
func (s *Set) ServePage(w http.ResponseWriter, r *http.Request, what string, page http.HandlerFunc) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, what+" answers GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	if i := strings.LastIndex(r.URL.Path, "/assets/"); i >= 0 {
		s.Serve(w, r, r.URL.Path[i+len("/assets/"):])
		return
	}
	page(w, r)
}

// Serve writes the asset called name, or a 404. Assets are immutable, so they are cached for
// a year; clients that accept gzip get it compressed.
func (s *Set) Serve(w http.ResponseWriter, r *http.Request, name string) {
	s.index()
	as, ok := s.byName[name]
	if !ok {
		http.Error(w, "no such "+s.owner+" asset", http.StatusNotFound)
		return
	}
	h := w.Header()
	h.Set("Content-Type", as.ctype)
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Add("Vary", "Accept-Encoding")
	if gz := s.gzip(as, r); gz != nil {
		h.Set("Content-Encoding", "gzip")
		h.Set("ETag", strings.TrimSuffix(as.etag, `"`)+`.gz"`)
		http.ServeContent(w, r, as.name, time.Time{}, bytes.NewReader(gz))
		return
	}
	h.Set("ETag", as.etag)
	f, err := s.open(as.path)
	if err != nil { // Load opened it: a broken build
		http.Error(w, "the "+s.owner+" asset cannot be read", http.StatusInternalServerError)
		return
	}
	defer f.Close()
	http.ServeContent(w, r, as.name, time.Time{}, f)
}

// gzip returns the body of as gzipped for r, or nil when r does not accept gzip or it saves
// little. The first request that accepts it compresses the body; the result is kept.
func (s *Set) gzip(as *asset, r *http.Request) []byte {
	if !acceptsGzip(r) {
		return nil
	}
	as.gzipOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		n, err := s.copyTo(zw, as)
		if zw.Close() == nil && err == nil && int64(buf.Len()) < n*9/10 {
			as.gzipped = buf.Bytes()
		}
	})
	return as.gzipped
}

// acceptsGzip reports whether the request's Accept-Encoding lists gzip with a non-zero weight.
func acceptsGzip(r *http.Request) bool {
	for _, field := range r.Header.Values("Accept-Encoding") {
		for _, coding := range strings.Split(field, ",") {
			name, params, _ := strings.Cut(coding, ";")
			if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
				continue
			}
			q, weighted := strings.CutPrefix(strings.TrimSpace(params), "q=")
			if !weighted {
				return true
			}
			weight, err := strconv.ParseFloat(q, 64)
			return err == nil && weight > 0
		}
	}
	return false
}
