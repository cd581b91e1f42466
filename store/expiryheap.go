package store

// expiring is an entry of an expiryHeap: what expires (item) and when (at, in
// nanoseconds after the store's base).
type expiring[T any] struct {
	at   int64
	item T
}

// expiryHeap is a min-heap on at: the replay store's shards and the records store
// both drop what has expired from its top. The entries are stored by value and compared
// on their field, so that a claim's push costs no call through an interface.
type expiryHeap[T any] []expiring[T]

func (h *expiryHeap[T]) push(e expiring[T]) {
	s := append(*h, e)
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p].at <= s[i].at {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
	*h = s
}

// pop removes and returns the entry that expires first; the heap is not empty.
func (h *expiryHeap[T]) pop() expiring[T] {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	h.down(0)
	return top
}

// down restores the heap order below i.
func (h expiryHeap[T]) down(i int) {
	for {
		l, small := 2*i+1, i
		if l < len(h) && h[l].at < h[small].at {
			small = l
		}
		if r := l + 1; r < len(h) && h[r].at < h[small].at {
			small = r
		}
		if small == i {
			return
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
}
