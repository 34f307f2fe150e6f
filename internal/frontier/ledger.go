package frontier

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sourcegraph/conc/pool"

	"github.com/litcrawl/litcrawl/internal/ledger"
)

// Ledger is the fleet's ledger: the papers delivered by any worker, as keys
// of the litcrawl_papers key-value bucket (one per paper id and one per
// DOI, each holding the run that first delivered the paper). It implements
// the engine's ledger port.
//
// A page costs one round trip to look up and one to commit, however many
// papers it holds: every key's request is sent at once (at most
// MaxInFlight at a time) and the answers are awaited together. The server
// answers each key on its own (a direct get, or a create): nats-server
// 2.9 has no request that reads several keys, and a value holding many
// papers (a digest per journal or per page) would be rewritten by every
// commit and fought over by the workers. See docs/distributed.md.
//
// It is not atomic: JetStream key-value has no transaction across keys, so
// Commit records the group's papers one key at a time, each with "create if
// absent" (the first run to record a paper keeps it). A Commit cut short
// leaves some papers recorded; the job is then delivered again, and the
// papers not yet recorded are sent again: delivery is at least once, keyed
// by paper id (the NATS sink's stream drops a resend by its msg-id within
// its duplicate window). It keeps no pages and no sink token: the job
// queue is what remembers pages in a fleet.
type Ledger struct {
	kv jetstream.KeyValue
	f  *Frontier // reads the walk states by subject (AllWalkStates)
}

// MaxInFlight bounds the requests one look-up or commit has in flight.
const MaxInFlight = 128

var _ ledger.Ledger = (*Ledger)(nil)

// Ledger is the frontier's ledger.
func (f *Frontier) Ledger() *Ledger { return &Ledger{kv: f.papers, f: f} }

// paperKey is the bucket key of a paper id or DOI (keys allow only
// [-/_=.a-zA-Z0-9]). A long one is keyed by its SHA-256 ("id.h.…"):
// a key is a subject, and a subject of some kilobytes breaks the
// connection that sends it (the server's control line limit). Base64 has
// no dot, so the two forms never meet.
func paperKey(kind, v string) string {
	enc := base64.RawURLEncoding.EncodeToString([]byte(v))
	if len(enc) > maxKeyText {
		sum := sha256.Sum256([]byte(v))
		return kind + ".h." + base64.RawURLEncoding.EncodeToString(sum[:])
	}
	return kind + "." + enc
}

// maxKeyText bounds the part of a paper's key that spells its id or DOI.
const maxKeyText = 256

func keysOf(p ledger.Paper) []string {
	keys := []string{paperKey("id", p.ID)}
	if doi := p.DOIKey(); doi != "" {
		keys = append(keys, paperKey("doi", doi))
	}
	return keys
}

// keyOf is one key of the paper at index paper.
type keyOf struct {
	paper int
	key   string
}

// allKeys lists every key of every paper.
func allKeys(papers []ledger.Paper) []keyOf {
	var out []keyOf
	for i, p := range papers {
		for _, k := range keysOf(p) {
			out = append(out, keyOf{i, k})
		}
	}
	return out
}

// each runs do for every key, at most MaxInFlight at once, and waits for
// all: one round trip for the lot.
func each(ctx context.Context, keys []keyOf, do func(ctx context.Context, paper int, key string) error) error {
	p := pool.New().WithContext(ctx).WithCancelOnError().WithFirstError().WithMaxGoroutines(MaxInFlight)
	for _, k := range keys {
		p.Go(func(ctx context.Context) error { return do(ctx, k.paper, k.key) })
	}
	return p.Wait()
}

// A paper key's value is the id of the run that first delivered the
// paper, then, when the key holds the paper's print, a zero byte and the
// print (a value written before prints were kept has none). The print is
// kept under the id's key, and under the DOI's when the paper was known
// by its DOI alone (an id "doi:…"), as ledger.Ledger says.
func encodeEntry(run string, p ledger.Print) []byte {
	if p.IsZero() {
		return []byte(run)
	}
	return append(append([]byte(run), 0), p[:]...)
}

func decodeEntry(v []byte) (run string, p ledger.Print) {
	if n := len(v) - ledger.PrintSize - 1; n >= 0 && v[n] == 0 {
		copy(p[:], v[n+1:])
		return string(v[:n]), p
	}
	return string(v), p
}

// printsUnder tells whether a paper's print belongs under key k: its id's
// key, or its DOI's when its id is its DOI.
func printsUnder(p ledger.Paper, k string) bool {
	return k[0] == 'i' || strings.HasPrefix(p.ID, "doi:")
}

// Lookup asks the bucket for every paper's id and DOI at once; a paper is
// known by its id's entry, else by its DOI's.
func (l *Ledger) Lookup(ctx context.Context, papers []ledger.Paper, runID string) ([]ledger.Seen, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// byID and byDOI hold each paper's answers: 0 not found, else 1 +
	// whether the entry is this run's.
	byID, byDOI := make([]uint8, len(papers)), make([]uint8, len(papers))
	idPrint, doiPrint := make([]ledger.Print, len(papers)), make([]ledger.Print, len(papers))
	err := each(ctx, allKeys(papers), func(ctx context.Context, i int, k string) error {
		e, err := l.kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("papers bucket: %w", err)
		}
		run, pr := decodeEntry(e.Value())
		v := uint8(1)
		if run == runID {
			v = 2
		}
		if k[0] == 'i' {
			byID[i], idPrint[i] = v, pr
		} else {
			byDOI[i], doiPrint[i] = v, pr
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]ledger.Seen, len(papers))
	for i := range papers {
		v := byID[i]
		if v == 0 {
			v = byDOI[i]
		}
		switch v {
		case 1:
			out[i].Delivery = ledger.DeliveredBefore
		case 2:
			out[i].Delivery = ledger.DeliveredThisRun
		}
		out[i].ByID = byID[i] != 0 || strings.HasPrefix(papers[i].ID, "doi:") && byDOI[i] != 0
		// A paper known by its DOI alone ("doi:…") finds its print where
		// its latest revision put it: under the DOI (the id's key keeps
		// its first).
		first, then := idPrint[i], doiPrint[i]
		if strings.HasPrefix(papers[i].ID, "doi:") {
			first, then = then, first
		}
		out[i].Print = first
		if out[i].Print.IsZero() {
			out[i].Print = then
		}
	}
	return out, nil
}

// Commit records the group's papers, every key of every page at once,
// create-if-absent. A paper is new when neither its id nor its DOI was
// recorded before. A key two papers of the group share (one paper on two
// pages, two ids with one DOI) is created once, for the first of them: the
// others are not new, as if the group were committed in order.
func (l *Ledger) Commit(ctx context.Context, g ledger.Group) ([]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var page []int            // the page of each paper, in group order
	var shared []bool         // whether a paper shares a key with an earlier one
	var runs []string         // the run of each paper
	var papers []ledger.Paper // each paper
	var keys []keyOf          // each key once, with the first paper that has it
	owner := map[string]int{}
	// lastPrint is, for each key, the last print of the group's papers
	// that belongs under it: a paper two pages show, its later revision.
	lastPrint := map[string]ledger.Print{}
	for i, pg := range g.Pages {
		for _, p := range pg.Papers {
			j := len(page)
			page, shared, runs, papers = append(page, i), append(shared, false), append(runs, pg.RunID), append(papers, p)
			for _, k := range keysOf(p) {
				if !p.Print.IsZero() {
					lastPrint[k] = p.Print
				}
				if _, ok := owner[k]; ok {
					shared[j] = true
					continue
				}
				owner[k] = j
				keys = append(keys, keyOf{j, k})
			}
		}
	}
	existed := make([]atomic.Bool, len(page))
	err := each(ctx, keys, func(ctx context.Context, j int, k string) error {
		p := papers[j]
		p.Print = lastPrint[k]
		var pr ledger.Print
		if printsUnder(p, k) {
			pr = p.Print
		}
		_, err := l.kv.Create(ctx, k, encodeEntry(runs[j], pr))
		switch {
		case errors.Is(err, jetstream.ErrKeyExists):
			existed[j].Store(true)
			if !p.Print.IsZero() {
				return l.rePrint(ctx, p, k)
			}
		case err != nil:
			return fmt.Errorf("papers bucket: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The marks after the papers: no transaction spans keys, and marks
	// set before papers they point below would skip them (a fleet's walk
	// travels in its jobs, which give none; a local run's may).
	for j, ws := range g.Walks {
		if err := l.SetWalkState(ctx, j, ws); err != nil {
			return nil, err
		}
	}
	out := make([]int, len(g.Pages))
	for j := range page {
		if !shared[j] && !existed[j].Load() {
			out[page[j]]++
		}
	}
	return out, nil
}

// rePrint writes a known paper's new print under its key k, keeping the
// run that first delivered it: under its id's key, and under its DOI's
// when the print belongs there or is there already (the paper's id
// changed). Two workers recording a revision at once both write it; the
// last one's stays, and both prints are of the same revision.
func (l *Ledger) rePrint(ctx context.Context, p ledger.Paper, k string) error {
	e, err := l.kv.Get(ctx, k)
	if err != nil {
		return fmt.Errorf("papers bucket: %w", err)
	}
	run, had := decodeEntry(e.Value())
	if !printsUnder(p, k) && had.IsZero() {
		return nil
	}
	if _, err := l.kv.Update(ctx, k, encodeEntry(run, p.Print), e.Revision()); err != nil && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return fmt.Errorf("papers bucket: %w", err)
	}
	return nil
}

var (
	_ ledger.WalkStates = (*Ledger)(nil)
	_ ledger.Emptiness  = (*Ledger)(nil)
)

// walkKey is the bucket key of a journal's nightly walk state.
func walkKey(journal int64) string { return "walk." + strconv.FormatInt(journal, 10) }

// WalkState is the journal's nightly walk state (see ledger.WalkStates);
// one written by an earlier version (its marks alone) reads as a state
// with those marks. A state that is not within a job's bounds (someone
// else wrote the bucket) is an error, never walked on.
func (l *Ledger) WalkState(ctx context.Context, journal int64) (ledger.WalkState, error) {
	e, err := l.kv.Get(ctx, walkKey(journal))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ledger.WalkState{}, nil
	}
	if err != nil {
		return ledger.WalkState{}, fmt.Errorf("papers bucket: %w", err)
	}
	ws, err := ledger.DecodeWalkState(e.Value())
	if err == nil {
		err = ValidState(walkKey(journal), ws)
	}
	if err != nil {
		return ledger.WalkState{}, fmt.Errorf("papers bucket: %s: %w", walkKey(journal), err)
	}
	return ws, nil
}

// SetWalkState stores the journal's walk state; the zero state clears
// it.
func (l *Ledger) SetWalkState(ctx context.Context, journal int64, ws ledger.WalkState) error {
	if ws.IsZero() {
		err := l.kv.Delete(ctx, walkKey(journal))
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("papers bucket: %w", err)
		}
		return nil
	}
	v, err := ledger.EncodeWalkState(ws)
	if err != nil {
		return err
	}
	if _, err := l.kv.Put(ctx, walkKey(journal), v); err != nil {
		return fmt.Errorf("papers bucket: %w", err)
	}
	return nil
}

// Empty says whether the fleet's ledger holds nothing yet: no paper, no
// walk state (ledger.Emptiness).
func (l *Ledger) Empty(ctx context.Context) (bool, error) {
	st, err := l.kv.Status(ctx)
	if err != nil {
		return false, fmt.Errorf("papers bucket: %w", err)
	}
	return st.Values() == 0, nil
}

// maxWalkStatesBytes bounds what one AllWalkStates reads in all, and
// maxWalkStateBytes one state (a message's size on a server's default
// max_payload).
const (
	maxWalkStatesBytes = 64 << 20
	maxWalkStateBytes  = 1 << 20
)

// AllWalkStates are the walk states of every journal the fleet's ledger
// holds one for, read in one pass (crawl status) by subject, as the
// workers bucket is (readLatest): at most max of them, within
// maxWalkStatesBytes; more says there were more.
func (l *Ledger) AllWalkStates(ctx context.Context, most int) (states map[int64]ledger.WalkState, more bool, err error) {
	states = map[int64]ledger.WalkState{}
	prefix := "$KV." + PapersBucket + "."
	res, err := l.f.readLatest(ctx, l.f.papersStream, prefix+"walk.*", readBounds{entries: most, entryBytes: maxWalkStateBytes, bytes: maxWalkStatesBytes}, false,
		func(subj string, data []byte, h nats.Header) bool {
			if op := h.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
				return true
			}
			key := strings.TrimPrefix(subj, prefix)
			j, err := strconv.ParseInt(strings.TrimPrefix(key, "walk."), 10, 64)
			if err != nil || j <= 0 {
				return false
			}
			ws, err := ledger.DecodeWalkState(data)
			if err != nil || ValidState(key, ws) != nil {
				return false // said by a walk that reads it
			}
			states[j] = ws
			return true
		})
	if err != nil {
		return nil, false, fmt.Errorf("papers bucket: %w", err)
	}
	return states, res.Total > most, nil
}
