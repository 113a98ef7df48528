package live

import (
	"sync/atomic"

	"petstore/models"
)

// Event is one pet added, as the petAdded subscription sends it. Events are shared by every
// subscriber: never change one (but through Render, which keeps what it renders).
type Event struct {
	Cursor string
	Pet    *models.Pet

	renderings atomic.Pointer[Rendering] // the newest first
}

// newEvent returns the event of p.
func newEvent(p *models.Pet) *Event {
	return &Event{Cursor: models.EncodeCursor(p.ID), Pet: p}
}

// MaxRenderings is how many renderings an Event keeps. Each subscriber chooses its selection,
// so the distinct ones have no bound; past this many, a rendering is made for each delivery
// and not kept.
const MaxRenderings = 8

// Rendering is an event written for one key (a selection, for every subscriber that selects
// the same way): JSON is shared by them all, never change it.
type Rendering struct {
	JSON  []byte
	key   string
	next  *Rendering
	count int // renderings in the list from this one on
}

// Render returns e rendered for key: made by render the first time key is asked for, then
// kept with the event for every later call with the same key, up to MaxRenderings keys (past
// them, made by render at each call). render must give the same bytes for the same key and
// event. Render is safe for concurrent use: callers that ask for a new key at the same time
// may each run render, and all but one rendering are dropped. The key is not retained.
func (e *Event) Render(key []byte, render func() []byte) *Rendering {
	head := e.renderings.Load()
	if r := find(head, nil, key); r != nil {
		return r
	}
	r := &Rendering{JSON: render(), key: string(key)}
	for head == nil || head.count < MaxRenderings {
		r.next, r.count = head, 1
		if head != nil {
			r.count += head.count
		}
		if e.renderings.CompareAndSwap(head, r) {
			return r
		}
		seen := head
		head = e.renderings.Load()
		if x := find(head, seen, key); x != nil { // added meanwhile
			return x
		}
	}
	return r
}

// find returns the rendering of key in the list from head up to end (excluded), or nil.
func find(head, end *Rendering, key []byte) *Rendering {
	for r := head; r != end; r = r.next {
		if r.key == string(key) {
			return r
		}
	}
	return nil
}
