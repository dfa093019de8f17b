package domain

// InGoroutine runs f in a goroutine of its own: how the server runs the
// work a request leaves for after its answer (the services'
// Config.Background, whose default it is). Tests hand the services a
// runner that calls f at once, or holds it until they choose: the same
// work, in one call order per schedule.
func InGoroutine(f func()) { go f() }
