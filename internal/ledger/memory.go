package ledger

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// Memory is a ledger held in memory, with every optional ability: what a
// run that keeps no state delivers through (crawl parse, crawl replay), so
// that it dedupes as a crawl does, and what tests of the engine's rules run
// on. It passes the conformance suite (ledgertest). Safe for concurrent use.
type Memory struct {
	mu     sync.Mutex
	ids    map[string]string // paper id → the run that delivered it first
	dois   map[string]string // DOI key → the run that delivered it first
	prints map[string]Print  // "i"+id or "d"+DOI key → the paper's print
	done   map[PageKey]bool
	failed map[PageKey]string
	token  []byte
	walks  map[int64]WalkState
}

var (
	_ Ledger     = (*Memory)(nil)
	_ PageBook   = (*Memory)(nil)
	_ TokenStore = (*Memory)(nil)
	_ WalkStates = (*Memory)(nil)
	_ Emptiness  = (*Memory)(nil)
)

// NewMemory makes an empty ledger in memory.
func NewMemory() *Memory {
	return &Memory{ids: map[string]string{}, dois: map[string]string{}, prints: map[string]Print{}, done: map[PageKey]bool{},
		failed: map[PageKey]string{}, walks: map[int64]WalkState{}}
}

// runOf is the run that delivered p first (ok false: none).
func (m *Memory) runOf(p Paper) (run string, ok bool) {
	if r, ok := m.ids[p.ID]; ok && p.ID != "" {
		return r, true
	}
	if k := p.DOIKey(); k != "" {
		r, ok := m.dois[k]
		return r, ok
	}
	return "", false
}

// printKey is the key of a paper's print: its id, or its DOI when its id
// is only that ("doi:…").
func printKey(p Paper) string {
	if strings.HasPrefix(p.ID, "doi:") || p.ID == "" {
		return "d" + p.DOIKey()
	}
	return "i" + p.ID
}

// Lookup implements Ledger.
func (m *Memory) Lookup(ctx context.Context, papers []Paper, runID string) ([]Seen, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := make([]Seen, len(papers))
	for i, p := range papers {
		switch r, ok := m.runOf(p); {
		case !ok:
		case r == runID:
			seen[i].Delivery = DeliveredThisRun
		default:
			seen[i].Delivery = DeliveredBefore
		}
		if strings.HasPrefix(p.ID, "doi:") {
			_, seen[i].ByID = m.dois[p.DOIKey()]
		} else if p.ID != "" {
			_, seen[i].ByID = m.ids[p.ID]
		}
		if pr, ok := m.prints[printKey(p)]; ok {
			seen[i].Print = pr
		} else if k := p.DOIKey(); k != "" {
			seen[i].Print = m.prints["d"+k]
		}
	}
	return seen, nil
}

// Commit implements Ledger: all or nothing, as one transaction would.
func (m *Memory) Commit(ctx context.Context, g Group) ([]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	fresh := make([]int, len(g.Pages))
	for i, pg := range g.Pages {
		for _, p := range pg.Papers {
			run, ok := m.runOf(p)
			if !ok {
				run = pg.RunID
				fresh[i]++
			}
			if _, ok := m.ids[p.ID]; !ok && p.ID != "" {
				m.ids[p.ID] = run
			}
			if k := p.DOIKey(); k != "" {
				if _, ok := m.dois[k]; !ok {
					m.dois[k] = run
				}
			}
			if !p.Print.IsZero() {
				m.prints[printKey(p)] = p.Print
				if k := p.DOIKey(); k != "" && m.prints["d"+k] != (Print{}) {
					m.prints["d"+k] = p.Print
				}
			}
		}
		if !pg.PapersOnly {
			m.done[pg.Key] = true
			delete(m.failed, pg.Key)
		}
	}
	if g.SinkToken != nil {
		m.token = slices.Clone(g.SinkToken)
	}
	for j, w := range g.Walks {
		m.setWalk(j, w)
	}
	return fresh, nil
}

// PageDone implements PageBook.
func (m *Memory) PageDone(ctx context.Context, k PageKey) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.done[k], nil
}

// FailPage implements PageBook.
func (m *Memory) FailPage(ctx context.Context, k PageKey, runID string, cause error, _ time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.done[k] {
		m.failed[k] = cause.Error()
	}
	return nil
}

// SinkToken implements TokenStore.
func (m *Memory) SinkToken(ctx context.Context) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.token), nil
}

// WalkState implements WalkStates.
func (m *Memory) WalkState(ctx context.Context, journal int64) (WalkState, error) {
	if err := ctx.Err(); err != nil {
		return WalkState{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.walks[journal].Clone(), nil
}

// SetWalkState implements WalkStates.
func (m *Memory) SetWalkState(ctx context.Context, journal int64, s WalkState) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setWalk(journal, s)
	return nil
}

func (m *Memory) setWalk(journal int64, s WalkState) {
	if s.IsZero() {
		delete(m.walks, journal)
	} else {
		m.walks[journal] = s.Clone()
	}
}

// Empty implements Emptiness.
func (m *Memory) Empty(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.ids) == 0 && len(m.dois) == 0 && len(m.done) == 0, nil
}
