package domain

import "context"

// Logger is the little the domain says outside its answers.
type Logger interface {
	Warn(ctx context.Context, msg string, kv ...string)
}
