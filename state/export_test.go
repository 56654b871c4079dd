package state

// SetMaxInsertBytes sets maxInsertBytes for a test (not a parallel one) and returns what
// restores it.
func SetMaxInsertBytes(n int) (restore func()) {
	old := maxInsertBytes
	maxInsertBytes = n
	return func() { maxInsertBytes = old }
}
