package live

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
	for r := head; r != nil; r = r.next {
		if r.key == string(key) {
			return r
		}
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
		for x := head; x != seen; x = x.next { // those added meanwhile
			if x.key == r.key {
				return x
			}
		}
	}
	return r
}
