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
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

// An asset is one embedded script or style sheet.
type asset struct {
	name  string // the public name: graphiql.min.0123456789.js
	ctype string
	body  []byte
	etag  string

	gzipOnce sync.Once
	gzipped  []byte // body gzipped, or nil when that saves nothing
}

// Set indexes embedded scripts and style sheets both by public name (for serving) and by
// embedded path (for page templates). A Set may be used by concurrent requests.
type Set struct {
	owner  string // names the page in messages: "playground"
	byName map[string]*asset
	byPath map[string]*asset
}

// contentTypes are the types of the assets, by extension (not from package mime, whose table
// the host's mime.types can change).
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// Load reads every .js and .css file of files; owner names the page in messages. It panics when
// files cannot be read or two assets would get the same public name: both are build mistakes.
func Load(files fs.FS, owner string) *Set {
	s := &Set{owner: owner, byName: map[string]*asset{}, byPath: map[string]*asset{}}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		ext := path.Ext(p)
		if err != nil || d.IsDir() || contentTypes[ext] == "" {
			return err
		}
		body, err := fs.ReadFile(files, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:5])
		as := &asset{
			name:  strings.TrimSuffix(path.Base(p), ext) + "." + hash + ext,
			ctype: contentTypes[ext],
			body:  body,
			etag:  `"` + hash + `"`,
		}
		if _, dup := s.byName[as.name]; dup {
			return errors.New("two assets named " + as.name)
		}
		s.byName[as.name] = as
		s.byPath[p] = as
		return nil
	})
	if err != nil {
		panic(owner + ": reading the embedded assets: " + err.Error())
	}
	return s
}

// URL returns the address of the asset embedded at p, relative to the page, whose last path
// segment is page, or an error for a path that is not embedded (page tests catch it).
func (s *Set) URL(page, p string) (string, error) {
	as, ok := s.byPath[p]
	if !ok {
		return "", errors.New(s.owner + ": the page refers to " + p + ", which is not embedded")
	}
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
	body, etag := as.body, as.etag
	if gz := as.gzip(); gz != nil && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		body, etag = gz, strings.TrimSuffix(etag, `"`)+`.gz"`
	}
	h.Set("ETag", etag)
	http.ServeContent(w, r, as.name, time.Time{}, bytes.NewReader(body))
}

// gzip returns the body gzipped, compressing it on first use, or nil when that is no smaller.
func (as *asset) gzip() []byte {
	as.gzipOnce.Do(func() {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(as.body)
		_ = zw.Close()
		if buf.Len() < len(as.body)*9/10 {
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
