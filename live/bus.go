package live

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bus carries wake-ups between the instances: "a pet up to this id committed".
type Bus interface {
	// Publish tells every instance that the pet with id committed.
	Publish(ctx context.Context, id int64) error
	// Listen calls wake at each message of another instance, and each time the listening
	// (re)starts, when messages may have been lost, until ctx ends.
	Listen(ctx context.Context, wake func())
}

// RedisBus is a Bus on Redis pub/sub: one channel, on a single server, a Sentinel-managed
// primary or a Redis Cluster (whose nodes pass every message on to each other).
type RedisBus struct {
	client  redis.UniversalClient
	channel string
}

// NewRedisBus returns the Bus of client on channel.
func NewRedisBus(client redis.UniversalClient, channel string) *RedisBus {
	return &RedisBus{client: client, channel: channel}
}

// Publish sends id on the channel.
func (b *RedisBus) Publish(ctx context.Context, id int64) error {
	return b.client.Publish(ctx, b.channel, strconv.FormatInt(id, 10)).Err()
}

// Listen subscribes to the channel; go-redis subscribes again after a lost connection, and
// each confirmation wakes the Hub, which reads what it missed meanwhile.
func (b *RedisBus) Listen(ctx context.Context, wake func()) {
	ps := b.client.Subscribe(ctx, b.channel)
	defer ps.Close()
	ch := ps.ChannelWithSubscriptions(redis.WithChannelHealthCheckInterval(5*time.Second), redis.WithChannelSize(16))
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-ch:
			if !ok {
				return
			}
			wake()
		}
	}
}
