package pets

import (
	"testing"

	"petstore/models"
)

// TestPageCacheKeepsNoPageReadBeforeAForget: a page read while a late pet was being forgotten
// may lack that pet, so it is not kept; a page read after is.
func TestPageCacheKeepsNoPageReadBeforeAForget(t *testing.T) {
	c := NewPageCache(1<<20, nil)
	key := pageKey{after: 0, n: 2}
	page := []models.Pet{{ID: 1, Name: "a"}, {ID: 3, Name: "c"}}
	mark := c.mark()
	c.Forget(2)
	c.put(key, page, mark)
	if _, ok := c.get(key); ok {
		t.Fatal("a page read before a Forget was kept")
	}
	c.put(key, page, c.mark())
	if _, ok := c.get(key); !ok {
		t.Fatal("a page read after the Forget was not kept")
	}
}
