package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/sourcegraph/conc/pool"

	"github.com/litcrawl/litcrawl/record"
)

// Multi fans a batch out to several sinks at once. A Write succeeds only
// when every sink acknowledged the batch; otherwise the errors of all the
// sinks that failed are joined. Its token holds each child's token, so a
// Multi restores every sink that can be rolled back.
type Multi struct {
	sinks []Sink
	// kept is a token (KeepTokens) whose entries for sinks not among
	// these are carried into every Token.
	kept []byte
	// Routes (nil: every record to every sink): the sinks (indexes) of
	// the records of each journal listed, and of every other record.
	byJournal map[int64][]int
	others    []int
}

// NewMulti fans out to sinks (at least one).
func NewMulti(sinks ...Sink) *Multi { return &Multi{sinks: sinks} }

// NewRouted fans each record out to the sinks of its journal (the
// listing's: record.Journal.ID): byJournal's, by index into sinks, for
// the journals it lists, others' for every other record. A record left
// with no sink fails the Write. Token, Restore and Close cover every sink.
func NewRouted(sinks []Sink, others []int, byJournal map[int64][]int) *Multi {
	return &Multi{sinks: sinks, others: others, byJournal: byJournal}
}

// Sinks are the children, in the order given.
func (m *Multi) Sinks() []Sink { return m.sinks }

func (m *Multi) Describe() string {
	names := make([]string, len(m.sinks))
	for i, s := range m.sinks {
		names[i] = Describe(s)
	}
	return strings.Join(names, ", ")
}

func (m *Multi) Write(ctx context.Context, recs []record.Record) error {
	if m.byJournal == nil && len(m.sinks) == 1 {
		return m.sinks[0].Write(ctx, recs)
	}
	batches := make([][]record.Record, len(m.sinks))
	if m.byJournal == nil {
		for i := range batches {
			batches[i] = recs
		}
	} else {
		for _, r := range recs {
			to := m.others
			if r.Journal != nil {
				if t, ok := m.byJournal[r.Journal.ID]; ok {
					to = t
				}
			}
			if len(to) == 0 {
				return fmt.Errorf("record %s (journal %v): no sink takes its journal's records", r.ID, journalOf(r))
			}
			for _, i := range to {
				batches[i] = append(batches[i], r)
			}
		}
	}
	p := pool.New().WithErrors().WithContext(ctx)
	for i, s := range m.sinks {
		if len(batches[i]) == 0 {
			continue
		}
		p.Go(func(ctx context.Context) error {
			if err := s.Write(ctx, batches[i]); err != nil {
				return fmt.Errorf("%s: %w", Describe(s), err)
			}
			return nil
		})
	}
	return p.Wait()
}

func journalOf(r record.Record) any {
	if r.Journal == nil {
		return "none"
	}
	return r.Journal.ID
}

// TokenKeyer is implemented by sinks whose commit token is stored under a
// key other than their Describe name: a JSONL sink keys on its absolute
// path, so "out/p.jsonl" and "./out/p.jsonl" are one sink.
type TokenKeyer interface {
	TokenKey() string
}

// tokenKey is the key s's token is stored under: its TokenKey (through
// any wrappers), else its name.
func tokenKey(s Sink) string {
	for x := s; x != nil; {
		if k, ok := x.(TokenKeyer); ok {
			return k.TokenKey()
		}
		u, ok := x.(Unwrapper)
		if !ok {
			break
		}
		x = u.Unwrap()
	}
	return Describe(s)
}

// multiToken is the token of a Multi: each Committer child's token under
// the child's name (its redacted URL, Describe), so a token is bound to the
// sink it came from, whatever the order or number of sinks next time.
type multiToken struct {
	Sinks map[string]json.RawMessage `json:"sinks"`
	// Mark, when set, tells one commit from another that leaves every
	// sink where it was (a quarantine retry into sinks that keep no
	// position: NATS, Kafka); restores ignore it.
	Mark string `json:"mark,omitempty"`
}

// MarkToken is tok (a Multi's token) with mark set, so that a commit of it
// differs from the last even when no sink moved.
func MarkToken(tok []byte, mark string) ([]byte, error) {
	var t multiToken
	if err := json.Unmarshal(tok, &t); err != nil {
		return nil, fmt.Errorf("mark token: bad token: %w", err)
	}
	if t.Sinks == nil {
		t.Sinks = map[string]json.RawMessage{}
	}
	t.Mark = mark
	return json.Marshal(t)
}

// KeepTokens carries the entries of prev (the token the last commit
// stored) for sinks this Multi does not hold into every Token: a run
// that opens only some of the configured sinks (its journals need no
// others) must not erase the others' positions, or the next run that
// opens them could not roll them back.
func (m *Multi) KeepTokens(prev []byte) { m.kept = prev }

// Token holds each Committer child's token under its name (and the kept
// entries of the others: KeepTokens).
func (m *Multi) Token() ([]byte, error) {
	tok, err := m.token()
	if err != nil || m.kept == nil {
		return tok, err
	}
	return MergeTokens(m.kept, tok)
}

func (m *Multi) token() ([]byte, error) {
	t := multiToken{Sinks: map[string]json.RawMessage{}}
	for _, s := range m.sinks {
		c, ok := s.(Committer)
		if !ok {
			continue
		}
		tok, err := c.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Describe(s), err)
		}
		if !json.Valid(tok) {
			tok, _ = json.Marshal(string(tok))
		}
		t.Sinks[tokenKey(s)] = tok
	}
	return json.Marshal(t)
}

// MergeTokens is the Multi token next with the entries of prev (an
// earlier Multi token) for the sinks next does not name: a run with fewer
// sinks (crawl quarantine retry to one of them) keeps the others'
// positions. A prev of the older form (by position) or none is dropped.
func MergeTokens(prev, next []byte) ([]byte, error) {
	var p, n multiToken
	if err := json.Unmarshal(next, &n); err != nil {
		return nil, fmt.Errorf("merge tokens: bad token: %w", err)
	}
	if len(prev) == 0 || json.Unmarshal(prev, &p) != nil || p.Sinks == nil {
		return next, nil
	}
	if n.Sinks == nil {
		n.Sinks = map[string]json.RawMessage{}
	}
	for k, v := range p.Sinks {
		if _, ok := n.Sinks[k]; !ok {
			n.Sinks[k] = v
		}
	}
	return json.Marshal(n)
}

// Restore hands each child the token stored under its name. A child with
// no token of its own (a sink added since) starts from where it is; a
// token whose sink is no longer configured is left alone. Tokens of the
// older form (keyed by position) are handed by position, to Restorers
// only; the JSONL sink then checks that the token names its own file.
func (m *Multi) Restore(ctx context.Context, token []byte) error {
	var t multiToken
	if err := json.Unmarshal(token, &t); err != nil {
		return fmt.Errorf("restore: bad token: %w", err)
	}
	byName := t.Sinks
	if byName == nil {
		var old map[string]json.RawMessage
		if err := json.Unmarshal(token, &old); err != nil {
			return fmt.Errorf("restore: bad token: %w", err)
		}
		byName = map[string]json.RawMessage{}
		for k, tok := range old {
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(m.sinks) {
				continue // a sink that is no longer there
			}
			byName[tokenKey(m.sinks[i])] = tok
		}
	}
	var errs []error
	for _, s := range m.sinks {
		tok, ok := byName[tokenKey(s)]
		r, can := s.(Restorer)
		if !ok || !can {
			continue
		}
		if err := r.Restore(ctx, tok); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", Describe(s), err))
		}
	}
	return errors.Join(errs...)
}

// Close closes every sink and joins their errors.
func (m *Multi) Close() error {
	var errs []error
	for _, s := range m.sinks {
		if err := s.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", Describe(s), err))
		}
	}
	return errors.Join(errs...)
}
