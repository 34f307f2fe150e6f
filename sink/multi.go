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
}

// NewMulti fans out to sinks (at least one).
func NewMulti(sinks ...Sink) *Multi { return &Multi{sinks: sinks} }

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
	if len(m.sinks) == 1 {
		return m.sinks[0].Write(ctx, recs)
	}
	p := pool.New().WithErrors().WithContext(ctx)
	for _, s := range m.sinks {
		p.Go(func(ctx context.Context) error {
			if err := s.Write(ctx, recs); err != nil {
				return fmt.Errorf("%s: %w", Describe(s), err)
			}
			return nil
		})
	}
	return p.Wait()
}

// Token is a JSON object from child index to child token, for the children
// that are Committers.
func (m *Multi) Token() ([]byte, error) {
	toks := map[string]json.RawMessage{}
	for i, s := range m.sinks {
		c, ok := s.(Committer)
		if !ok {
			continue
		}
		t, err := c.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Describe(s), err)
		}
		if !json.Valid(t) {
			t, _ = json.Marshal(string(t))
		}
		toks[strconv.Itoa(i)] = t
	}
	return json.Marshal(toks)
}

// Restore hands each child its token. The sinks must be given in the same
// order as when the token was made.
func (m *Multi) Restore(ctx context.Context, token []byte) error {
	var toks map[string]json.RawMessage
	if err := json.Unmarshal(token, &toks); err != nil {
		return fmt.Errorf("restore: bad token: %w", err)
	}
	var errs []error
	for k, t := range toks {
		i, err := strconv.Atoi(k)
		if err != nil || i < 0 || i >= len(m.sinks) {
			return fmt.Errorf("restore: the token names sink %s, but there are %d sinks", k, len(m.sinks))
		}
		r, ok := m.sinks[i].(Restorer)
		if !ok {
			return fmt.Errorf("restore: sink %d (%s) cannot restore a token", i, Describe(m.sinks[i]))
		}
		if err := r.Restore(ctx, t); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", Describe(m.sinks[i]), err))
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
