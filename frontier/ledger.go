package frontier

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/litcrawl/litcrawl/ledger"
)

// Ledger is the fleet's ledger: the papers delivered by any worker, as keys
// of the litcrawl_papers key-value bucket (one per paper id and one per
// DOI, each holding the run that first delivered the paper). It implements
// the engine's ledger port.
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
}

var _ ledger.Ledger = (*Ledger)(nil)

// Ledger is the frontier's ledger.
func (f *Frontier) Ledger() *Ledger { return &Ledger{kv: f.papers} }

// paperKey is the bucket key of a paper id or DOI (keys allow only
// [-/_=.a-zA-Z0-9]).
func paperKey(kind, v string) string {
	return kind + "." + base64.RawURLEncoding.EncodeToString([]byte(v))
}

func keysOf(p ledger.Paper) []string {
	keys := []string{paperKey("id", p.ID)}
	if doi := p.DOIKey(); doi != "" {
		keys = append(keys, paperKey("doi", doi))
	}
	return keys
}

// Lookup asks the bucket for each paper's id, then its DOI.
func (l *Ledger) Lookup(ctx context.Context, papers []ledger.Paper, runID string) ([]ledger.Seen, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]ledger.Seen, len(papers))
	for i, p := range papers {
		for _, k := range keysOf(p) {
			e, err := l.kv.Get(ctx, k)
			if errors.Is(err, jetstream.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("papers bucket: %w", err)
			}
			if string(e.Value()) == runID {
				out[i] = ledger.SeenThisRun
			} else {
				out[i] = ledger.SeenBefore
			}
			break
		}
	}
	return out, nil
}

// Commit records each page's papers, key by key, create-if-absent. A
// paper is new when neither its id nor its DOI was recorded before.
func (l *Ledger) Commit(ctx context.Context, g ledger.Group) ([]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]int, len(g.Pages))
	for i, pg := range g.Pages {
		for _, p := range pg.Papers {
			fresh := true
			for _, k := range keysOf(p) {
				_, err := l.kv.Create(ctx, k, []byte(pg.RunID))
				switch {
				case errors.Is(err, jetstream.ErrKeyExists):
					fresh = false
				case err != nil:
					return nil, fmt.Errorf("papers bucket: %w", err)
				}
			}
			if fresh {
				out[i]++
			}
		}
	}
	return out, nil
}

var _ ledger.WalkMarks = (*Ledger)(nil)

// walkKey is the bucket key of a journal's nightly walk mark.
func walkKey(journal int64) string { return "walk." + strconv.FormatInt(journal, 10) }

// WalkMarks are the journal's nightly walk marks (see ledger.WalkMarks).
func (l *Ledger) WalkMarks(ctx context.Context, journal int64) ([]ledger.WalkMark, error) {
	e, err := l.kv.Get(ctx, walkKey(journal))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("papers bucket: %w", err)
	}
	var marks []ledger.WalkMark
	if err := json.Unmarshal(e.Value(), &marks); err != nil {
		return nil, fmt.Errorf("papers bucket: %s: %w", walkKey(journal), err)
	}
	if len(marks) == 0 {
		return nil, nil
	}
	return marks, nil
}

// SetWalkMarks stores the journal's marks; none clears them.
func (l *Ledger) SetWalkMarks(ctx context.Context, journal int64, marks []ledger.WalkMark) error {
	if len(marks) == 0 {
		err := l.kv.Delete(ctx, walkKey(journal))
		if err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("papers bucket: %w", err)
		}
		return nil
	}
	v, err := json.Marshal(marks)
	if err != nil {
		return err
	}
	if _, err := l.kv.Put(ctx, walkKey(journal), v); err != nil {
		return fmt.Errorf("papers bucket: %w", err)
	}
	return nil
}
