package fifo

// Entries returns the number of keys the queue holds an entry for: queued,
// in flight, or both (Len counts the queued ones only). With the entries
// kept for reuse (at most keepFree) it bounds the queue's per-key memory,
// for a soak test to see that it stays bounded. Any goroutine.
func (q *Queue) Entries() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.mu.entries)
}
