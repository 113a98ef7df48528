package pets

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// LateChannel is the Redis pub/sub channel on which an instance tells the others of a late pet
// (PageCache), after the rate limiter's key prefix. A message is "INSTANCE:ID": the sender's
// random name, which it skips when the message comes back, and the pet's id.
const LateChannel = "pages:late"

// LateBus carries late pets between the instances that share a database and a Redis: each
// publishes its own (Publish, the late function of NewPageCache) and makes its cache forget
// those of the others (Listen).
type LateBus struct {
	rdb      redis.UniversalClient
	channel  string // the key prefix, then LateChannel
	instance string // this instance's random name
}

// NewLateBus returns the LateBus of the instance named instance on rdb, its channel under the
// key prefix.
func NewLateBus(rdb redis.UniversalClient, prefix, instance string) *LateBus {
	return &LateBus{rdb: rdb, channel: prefix + LateChannel, instance: instance}
}

// Publish tells the other instances of the late pet id. A failure is logged: their pages may
// lack the pet until it settles into them otherwise.
func (b *LateBus) Publish(id int64) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := b.rdb.Publish(ctx, b.channel, b.instance+":"+strconv.FormatInt(id, 10)).Err(); err != nil {
		slog.Error("page cache: telling the other instances of a late pet failed; their pages may lack it", "id", id, "err", err)
	}
}

// Listen makes pages forget the late pets other instances tell of, until ctx ends. Each time
// the subscription (re)starts, when messages may have been lost, pages is cleared.
func (b *LateBus) Listen(ctx context.Context, pages *PageCache) {
	ps := b.rdb.Subscribe(ctx, b.channel)
	defer ps.Close()
	ch := ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(5*time.Second), redis.WithChannelSize(64))
	for {
		select {
		case <-ctx.Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			m, isMessage := msg.(*redis.Message)
			if !isMessage { // a (re)subscription
				pages.Clear()
				continue
			}
			from, id, _ := strings.Cut(m.Payload, ":")
			if n, err := strconv.ParseInt(id, 10, 64); err == nil && from != b.instance {
				pages.Forget(n)
			}
		}
	}
}
