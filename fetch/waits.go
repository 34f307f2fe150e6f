package fetch

import (
	"sync"
	"time"
)

// Wait is a wait of the fetcher's long enough to be said: what it waits
// for (a host, and why: a cooling circuit, a Retry-After, a Crawl-delay,
// backoff) and until when, for which page.
type Wait struct {
	Host    string
	Cause   string
	Journal int64
	Page    int
	Until   time.Time
}

// Waits are the long waits under way, for a progress display: the
// fetcher notes each as it begins, and a wait is over when its time has
// passed. Safe for concurrent use; the zero value is ready, and a nil
// *Waits notes nothing.
type Waits struct {
	mu sync.Mutex
	m  map[waitKey]Wait
}

type waitKey struct {
	host    string
	journal int64
	page    int
}

// maxWaits bounds the waits kept (one per page in flight, in practice).
const maxWaits = 4096

// Note records a wait (replacing the page's earlier one).
func (w *Waits) Note(x Wait) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.prune(time.Now())
	if w.m == nil {
		w.m = map[waitKey]Wait{}
	}
	if len(w.m) < maxWaits {
		w.m[waitKey{x.Host, x.Journal, x.Page}] = x
	}
}

// Longest is the wait under way that ends last, and how many are under
// way; ok is false when none is.
func (w *Waits) Longest() (longest Wait, n int, ok bool) {
	if w == nil {
		return Wait{}, 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.prune(time.Now())
	for _, x := range w.m {
		if !ok || x.Until.After(longest.Until) {
			longest, ok = x, true
		}
	}
	return longest, len(w.m), ok
}

func (w *Waits) prune(now time.Time) {
	for k, x := range w.m {
		if !x.Until.After(now) {
			delete(w.m, k)
		}
	}
}
