package atom

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/record"
	"github.com/litcrawl/litcrawl/sink"
)

// A write that would make a feed's state larger than the bound read back
// is refused (its records go to the quarantine); the state on disk stays
// one the sink opens.
func TestStateNeverPassesItsBound(t *testing.T) {
	dir := t.TempDir()
	rec := func(id string) []record.Record {
		return []record.Record{{ID: id, Title: "T", Abstract: strings.Repeat("word ", 1000), Published: "2026-01-01", Journal: &record.Journal{ID: 1}}}
	}
	s, err := open(context.Background(), "atom:"+dir, sink.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.(*atomSink).o.maxState = 20 << 10
	refused := 0
	for i := range 10 {
		err := s.Write(context.Background(), rec(strings.Repeat("p", i+1)))
		switch {
		case errors.Is(err, sink.ErrRefused):
			refused++
		case err != nil:
			t.Fatal(err)
		}
	}
	s.Close()
	if refused == 0 {
		t.Fatal("no write was refused: the state passed its bound")
	}
	s, err = open(context.Background(), "atom:"+dir, sink.Options{})
	if err != nil {
		t.Fatalf("the state written cannot be read back: %v", err)
	}
	s.Close()
}
