package repository

// OutboxShard is the partition of an item's outbox marks (a test writes a
// late-landing mark by hand).
var OutboxShard = shardOf
