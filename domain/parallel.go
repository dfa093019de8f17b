package domain

// Parallel runs fn(0..n-1) at once and waits for all: independent
// statements go out together, so a request waits one round trip for them.
func Parallel(n int, fn func(i int)) {
	if n == 1 {
		fn(0)
		return
	}
	done := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			fn(i)
		}()
	}
	for i := 0; i < n; i++ {
		<-done
	}
}
