package frontier_test

import (
	"encoding/json"
	"testing"

	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/ledger"
)

// FuzzJob: a job message is untrusted bytes (anyone who can publish to
// the work subject writes one). ReadJob and Validate never panic; a job
// they accept round-trips, and its walk takes steps over any page without
// panicking, never asks for a page outside 1 to config's bound, and never
// grows its state past the bounds Validate holds it to.
func FuzzJob(f *testing.F) {
	f.Add([]byte(`{"journal":4,"run_id":"r2","page":9}`))
	f.Add([]byte(`{"journal":5,"run_id":"r","nightly":true,"page":3,"stop_after_known":2,"max_pages":9,"marks":[{"page":7,"papers":["p1"]}],"in_gap":true}`))
	w := engine.NewWalk(engine.Limits{StopAfterKnownPages: 1, MaxPages: 5}, 1, ledger.WalkState{
		Head: []string{"a", "b"}, Marks: []ledger.WalkMark{{Page: 3, Papers: []string{"x", "y"}, Offset: 40, End: []string{"c", "d"}}}})
	good, _ := json.Marshal(frontier.WalkJob(5, "r", w))
	f.Add(good)
	f.Add([]byte(`{"v":2,"journal":62,"page":2,"run_id":"r","nightly":true,"walk":{"phase":"seek","max_pages":5,"stop_after_known":1,"skip_from":9,"target":3,"state":{"marks":[{"page":2,"papers":["x"]}]}}}`))
	f.Add([]byte(`{"v":2,"journal":62,"page":1,"run_id":"r","nightly":true,"walk":{"phase":"audit","max_pages":5,"stop_after_known":1,"audit_pages":2,"audit_left":2,"audit_from":1}}`))
	f.Add([]byte(`{"v":3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, err := frontier.ReadJob(data)
		if err != nil || j.Validate() != nil {
			return
		}
		again, err := json.Marshal(j)
		if err != nil {
			t.Fatalf("an accepted job does not marshal: %v", err)
		}
		if back, err := frontier.ReadJob(again); err != nil || back.Validate() != nil {
			t.Fatalf("an accepted job does not read back: %v", err)
		}
		if !j.Nightly {
			return
		}
		walk := frontier.WalkOf(j)
		pages := [][]ledger.Paper{
			{{ID: "a"}, {ID: "b"}, {ID: "x"}},
			{{ID: "y"}, {ID: "n1"}, {ID: "c"}, {ID: "d"}},
			{},
			{{ID: "n2", DOI: "10.1/z"}},
		}
		for step := 0; step < 12; step++ {
			ps := pages[step%len(pages)]
			seen := make([]ledger.Delivery, len(ps))
			for i := range seen {
				seen[i] = ledger.Delivery(step+i) % 3
			}
			if hold := walk.Hold(); hold != nil {
				hold(ps, seen)
			}
			d := engine.Delivered{Records: len(ps), Papers: ps, Delivery: seen, Last: step == 9}
			walk.CrashState()(d)
			var goOn bool
			if step == 7 {
				walk, goOn = walk.PastEnd()
			} else {
				walk, goOn = walk.Next(d)
			}
			next := frontier.WalkJob(j.Journal, j.RunID, walk)
			if err := next.Validate(); goOn && err != nil {
				t.Fatalf("step %d: the walk's next job breaks the bounds: %v\n%s", step, err, data)
			}
			if !goOn {
				return
			}
		}
	})
}
