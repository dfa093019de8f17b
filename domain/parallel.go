package domain

// Parallel runs fn(0..n-1) at once and waits for all: independent
// statements go out together, so a request waits one round trip for them.
// The last runs on the calling goroutine, which would only wait meanwhile:
// one goroutine fewer to start and schedule per call.
func Parallel(n int, fn func(i int)) {
	if n <= 0 {
		return
	}
	done := make(chan struct{}, n-1)
	for i := 0; i < n-1; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			fn(i)
		}()
	}
	fn(n - 1)
	for i := 0; i < n-1; i++ {
		<-done
	}
}
