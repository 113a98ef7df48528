package documents

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
	"gorm.io/gorm"
)

// DefaultRefreshEvery is how often a Registry looks whether the list changed: a document added
// or removed is run or refused by every instance within it.
const DefaultRefreshEvery = 2 * time.Second

// Listed is a listed document ready to run: Doc is its body, parsed and validated once, when
// the instance read it.
type Listed struct {
	Document
	Doc *ast.QueryDocument
}

// Prepare parses and validates the body of a listed document against the schema the instance
// serves, and checks it against the instance's bounds.
type Prepare func(body string) (*ast.QueryDocument, error)

// Registry is an instance's copy of the listed documents, looked up without touching the
// database: an id or hash that names none, however many a client sends, costs a map lookup.
// Run keeps it fresh: every DefaultRefreshEvery it reads the table's count and highest seq (one
// row), and reads the documents again only when they changed. A document that no longer
// validates (the schema changed since it was added) is logged and left out: it is refused as an
// unknown one until it is added again.
type Registry struct {
	db      *gorm.DB
	prepare Prepare
	timeout time.Duration // of each read
	mu      sync.Mutex    // serialises refresh
	cur     atomic.Pointer[index]
}

// index is one reading of the table.
type index struct {
	v     version
	byID  map[string]*Listed
	bySHA map[string]*Listed // by Hash(Body)
}

// NewRegistry returns the Registry of the documents in db, read once; each read takes at most
// timeout.
func NewRegistry(ctx context.Context, db *gorm.DB, prepare Prepare, timeout time.Duration) (*Registry, error) {
	r := &Registry{db: db, prepare: prepare, timeout: timeout}
	r.cur.Store(&index{v: version{MaxSeq: -1}})
	return r, r.Refresh(ctx)
}

// Len returns how many documents are listed.
func (r *Registry) Len() int { return len(r.cur.Load().byID) }

// Lookup returns the listed document that id names, or nil: the document stored under id, or,
// for "sha256:" followed by a hash, the one stored under the hash or whose body has it (the
// GraphQL-over-HTTP trusted documents' form).
func (r *Registry) Lookup(id string) *Listed {
	ix := r.cur.Load()
	if l := ix.byID[id]; l != nil {
		return l
	}
	if h, ok := strings.CutPrefix(id, "sha256:"); ok {
		if l := ix.byID[h]; l != nil {
			return l
		}
		return ix.bySHA[h]
	}
	return nil
}

// ByHash returns the listed document whose id or body's SHA-256 is hash (as an automatic
// persisted query names it), or nil.
func (r *Registry) ByHash(hash string) *Listed {
	ix := r.cur.Load()
	if l := ix.bySHA[hash]; l != nil {
		return l
	}
	return ix.byID[hash]
}

// Refresh reads the documents again if the table changed since the last reading.
func (r *Registry) Refresh(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	old := r.cur.Load()
	v, err := readVersion(ctx, r.db)
	if err != nil || v == old.v {
		return err
	}
	docs, err := List(ctx, r.db)
	if err != nil {
		return err
	}
	ix := &index{byID: make(map[string]*Listed, len(docs)), bySHA: make(map[string]*Listed, len(docs))}
	ix.v.Count = int64(len(docs)) // the version of what was read, which may be past v
	for _, d := range docs {
		ix.v.MaxSeq = max(ix.v.MaxSeq, d.Seq)
		l := &Listed{Document: d}
		if prev := old.bySHA[d.SHA256]; prev != nil {
			l.Doc = prev.Doc // the same body: parsed and validated already
		} else if l.Doc, err = r.prepare(d.Body); err != nil {
			slog.WarnContext(ctx, "trusted document left out: it no longer validates; add it again once fixed", "id", d.ID, "err", err)
			continue
		}
		ix.byID[d.ID] = l
		if ix.bySHA[d.SHA256] == nil {
			ix.bySHA[d.SHA256] = l
		}
	}
	r.cur.Store(ix)
	return nil
}

// Run refreshes the registry every `every` until ctx is done. The documents last read are kept
// while reads fail; the first failure of a run of them is logged, and the read that ends it.
func (r *Registry) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := r.Refresh(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil && !failing:
			slog.WarnContext(ctx, "trusted documents not refreshed; the last ones read are kept until a read succeeds", "err", err)
		case err == nil && failing:
			slog.InfoContext(ctx, "trusted documents refreshed again", "documents", r.Len())
		}
		failing = err != nil
	}
}
