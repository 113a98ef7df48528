package playground

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
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

// files holds the page template, our own script and style sheet, and the vendored GraphiQL and
// React builds (see vendor/README.md).
//
//go:embed page.html static/*.js static/*.css vendor/*/*.js vendor/*/*.css
var files embed.FS

// An asset is one embedded script or style sheet, served under a name that carries a hash of
// its content, so that it can be cached for good: a new build gets a new name.
type asset struct {
	name  string // the public name: graphiql.min.0123456789.js
	ctype string
	body  []byte
	etag  string

	gzipOnce sync.Once
	gzipped  []byte // body gzipped, or nil when that saves nothing
}

// assets indexes the embedded scripts and style sheets both by public name (for serving) and by
// embedded path (for the page template).
type assets struct {
	byName map[string]*asset
	byPath map[string]*asset
}

// contentTypes are the types of the assets, by extension (not from package mime, whose table
// the host's mime.types can change).
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// loadAssets reads every .js and .css file embedded under static/ and vendor/.
func loadAssets() *assets {
	a := &assets{byName: map[string]*asset{}, byPath: map[string]*asset{}}
	err := fs.WalkDir(files, ".", func(p string, d fs.DirEntry, err error) error {
		ext := path.Ext(p)
		if err != nil || d.IsDir() || contentTypes[ext] == "" {
			return err
		}
		body, err := files.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		hash := hex.EncodeToString(sum[:5])
		base := path.Base(p)
		as := &asset{
			name:  strings.TrimSuffix(base, ext) + "." + hash + ext,
			ctype: contentTypes[ext],
			body:  body,
			etag:  `"` + hash + `"`,
		}
		if _, dup := a.byName[as.name]; dup {
			panic("playground: two assets named " + as.name)
		}
		a.byName[as.name] = as
		a.byPath[p] = as
		return nil
	})
	if err != nil {
		panic("playground: reading the embedded assets: " + err.Error())
	}
	return a
}

// url returns the address of the asset embedded at p, relative to the page, whose last path
// segment is page, or an error for a path that is not embedded (the page test catches it).
func (a *assets) url(page, p string) (string, error) {
	as, ok := a.byPath[p]
	if !ok {
		return "", errors.New("playground: the page refers to " + p + ", which is not embedded")
	}
	return page + "/assets/" + as.name, nil
}

// serve writes the asset called name, or a 404. Assets are immutable, so they are cached for
// a year; clients that accept gzip get it compressed.
func (a *assets) serve(w http.ResponseWriter, r *http.Request, name string) {
	as, ok := a.byName[name]
	if !ok {
		http.Error(w, "no such playground asset", http.StatusNotFound)
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
