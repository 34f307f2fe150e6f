package engine

import (
	"context"
	"testing"
	"time"

	"github.com/litcrawl/litcrawl/internal/ledger"
	"github.com/litcrawl/litcrawl/parser"
)

// Pages handed over asynchronously (a backfill's) wait for company and
// are committed in one group; a page someone waits on (a walk's) is not
// kept waiting, and takes the waiting pages with it; stopping commits
// what waits at once. The groups' linger is an hour here, so any wait on
// it would show.
func TestCommitterGroupsWhatNoOneWaitsOn(t *testing.T) {
	st, out, _ := deliveryParts(t)
	page := func(n int) Item {
		return Item{Key: ledger.PageKey{Journal: 5, Page: n}, Page: &parser.Page{Records: recs(string(rune('a' + n)))}, RunID: "r1"}
	}
	ctx := context.Background()
	groups := make(chan int, 8)
	then := func(d Delivered, err error) {
		if err != nil {
			t.Error(err)
		}
		groups <- d.Group
	}

	c := startLingering(st, out, time.Hour)
	for n := range 3 {
		if err := c.deliverAsync(ctx, page(n), then); err != nil {
			t.Fatal(err)
		}
	}
	waited := make(chan Delivered, 1)
	go func() {
		d, err := c.deliver(ctx, page(3))
		if err != nil {
			t.Error(err)
		}
		waited <- d
	}()
	select {
	case d := <-waited:
		if d.Group != 4 {
			t.Errorf("the waited-on page was committed in a group of %d, want 4 (with the three waiting)", d.Group)
		}
	case <-time.After(time.Minute):
		t.Fatal("a page someone waits on waited for the group's linger")
	}
	for range 3 {
		if g := <-groups; g != 4 {
			t.Errorf("an asynchronous page was committed in a group of %d, want 4", g)
		}
	}

	for n := 4; n < 6; n++ {
		if err := c.deliverAsync(ctx, page(n), then); err != nil {
			t.Fatal(err)
		}
	}
	c.stop() // must not wait the hour
	for range 2 {
		if g := <-groups; g != 2 {
			t.Errorf("a page waiting when the run stopped was committed in a group of %d, want 2", g)
		}
	}
}
