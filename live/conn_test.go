package live

import (
	"context"
	"sync"
	"sync/atomic"

	"petstore/apierr"
)

// fakeConn is a Conn that admits admit charges and records how it was cut off or ended.
type fakeConn struct {
	admit   int32
	charges atomic.Int32

	mu     sync.Mutex
	code   int
	reason string
	end    *apierr.Error
}

func (c *fakeConn) Cut(code int, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.code == 0 {
		c.code, c.reason = code, reason
	}
}

func (c *fakeConn) Charge(context.Context, int) error {
	if c.charges.Add(1) > c.admit {
		return apierr.New(apierr.RateLimited, "rate limit of %d requests per minute exceeded; retry after 9 seconds", c.admit)
	}
	return nil
}

func (c *fakeConn) End(_ context.Context, err *apierr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.end = err
}

// cutCode returns the close code c was cut off with, 0 for none.
func (c *fakeConn) cutCode() int {
	code, _ := c.cut()
	return code
}

// cut returns the close code and reason c was cut off with, 0 and "" for none.
func (c *fakeConn) cut() (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.code, c.reason
}

// ended returns the error c's subscription ended with, nil for none.
func (c *fakeConn) ended() *apierr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.end
}
