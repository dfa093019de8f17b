package repository

import (
	"time"

	"github.com/gocql/gocql"
)

// OutboxShard is the shard of an item's outbox marks (a test writes a
// late-landing mark by hand).
var OutboxShard = shardOf

// OutboxBucket is the window a mark made at t falls in, with o's layout.
func (o *Outbox) OutboxBucket(t time.Time) time.Time { return o.bucketOf(t) }

// WithLayout returns the outbox with windows of width and a horizon (tests
// that cannot wait minutes; its keyspace must be the test's own: a mark's
// window is worked out from the width again when it is done).
func (o *Outbox) WithLayout(width, horizon time.Duration) *Outbox {
	c := *o
	c.width, c.horizon = width, horizon
	return &c
}

// WithTracer returns the outbox tracing its reads of the queue's windows.
func (o *Outbox) WithTracer(t gocql.Tracer) *Outbox {
	c := *o
	c.tracer = t
	return &c
}
