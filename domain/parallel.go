package domain

import (
	"context"
	"time"
)

// Parallel runs fn(0..n-1) at once and waits for all: independent
// statements go out together, so a request waits one round trip for them.
// Each fn gets its own branch of ctx, on which the request's round trips
// count its statements as sent together however late its goroutine starts
// (together); fn must send on that ctx, which its parameter's name
// shadows. The last runs on the calling goroutine, which would only wait
// meanwhile: one goroutine fewer to start and schedule per call.
func Parallel(ctx context.Context, n int, fn func(ctx context.Context, i int)) {
	if n <= 0 {
		return
	}
	branches := together(ctx, n, time.Now())
	branch := func(i int) context.Context {
		if branches == nil {
			return ctx
		}
		return branches[i]
	}
	done := make(chan struct{}, n-1)
	for i := 0; i < n-1; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			fn(branch(i), i)
		}()
	}
	fn(branch(n-1), n-1)
	for i := 0; i < n-1; i++ {
		<-done
	}
}
