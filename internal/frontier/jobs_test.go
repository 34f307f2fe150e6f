package frontier_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/litcrawl/litcrawl/internal/config"
	"github.com/litcrawl/litcrawl/internal/engine"
	"github.com/litcrawl/litcrawl/internal/frontier"
	"github.com/litcrawl/litcrawl/internal/ledger"
)

// fill sets every exported field of v, recursively, to a value that is
// not its zero (distinct per field, so two swapped fields show too);
// skip names fields left alone.
func fill(t *testing.T, v reflect.Value, n *int, skip map[string]bool) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() || skip[f.Name] {
				continue
			}
			fill(t, v.Field(i), n, skip)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(t, s.Index(0), n, skip)
		fill(t, s.Index(1), n, skip)
		v.Set(s)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("paper-" + string(rune('a'+*n%26)))
	case reflect.Pointer:
	default:
		t.Fatalf("fill: a field of kind %s: teach the test how to fill it", v.Kind())
	}
}

// TestJobCarriesTheWalkWhole: every field of engine.Walk a step needs
// survives a nightly job's trip through JSON from one worker to the next,
// so a field added to the walk is never lost across the fleet (Notes are
// said by the worker that made them; the walk's end is handled there).
func TestJobCarriesTheWalkWhole(t *testing.T) {
	var w engine.Walk
	n := 0
	fill(t, reflect.ValueOf(&w).Elem(), &n, map[string]bool{"Notes": true, "Phase": true})
	w.Phase = engine.PhaseGap
	w.Looking = &ledger.WalkMark{Page: 4, Papers: []string{"x"}, Stuck: 2}
	job := frontier.WalkJob(7, "r1", w)
	job.PrevPage = 3
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	back, err := frontier.ReadJob(data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, job) {
		t.Fatalf("the job did not survive its round trip:\nsent %+v\ngot  %+v\njson %s", job, back, data)
	}
	if got := frontier.WalkOf(back); !reflect.DeepEqual(got, w) {
		t.Fatalf("the walk did not survive the job's round trip:\nsent %+v\ngot  %+v\njson %s", w, got, data)
	}
	if !strings.HasPrefix(string(data), `{"v":2,`) {
		t.Errorf("a job's JSON does not begin with its format: %s", data)
	}
}

// TestPageJobCarriesOnlyItsPage: a page job's JSON names its format,
// journal, page and run only, and a page job with a walk is refused.
func TestPageJobCarriesOnlyItsPage(t *testing.T) {
	data, _ := json.Marshal(frontier.PageJob(4, 9, "r2"))
	if got, want := string(data), `{"v":2,"journal":4,"run_id":"r2","page":9}`; got != want {
		t.Fatalf("page job JSON %s, want %s", got, want)
	}
	j := frontier.PageJob(4, 9, "r2")
	j.Walk = &frontier.WalkMsg{Phase: engine.PhaseTop, MaxPages: 5, StopAfterKnown: 1}
	if err := j.Validate(); err == nil {
		t.Fatal("a page job carrying a walk was accepted")
	}
}

// TestJobsOfTheFormatBefore: during an upgrade, jobs published by the
// version before (no "v", the walk's fields at the top level) are still
// read: a page job as it was, a nightly job as a walk from page 1 with its
// limits and its marks; a job of a later format is refused with why.
func TestJobsOfTheFormatBefore(t *testing.T) {
	page, err := frontier.ReadJob([]byte(`{"journal":4,"run_id":"r2","page":9}`))
	if err != nil || page != frontier.PageJob(4, 9, "r2") || page.Validate() != nil {
		t.Fatalf("a page job of format 1: %+v %v", page, err)
	}
	old := `{"journal":5,"run_id":"20261205T020000Z-0123abcd","nightly":true,"page":3,"known_run":1,"walked":2,` +
		`"stop_after_known":2,"max_pages":9,"marks":[{"page":7,"papers":["p1","doi:10.1/x","p2"]},{"page":12,"papers":["q"],"loose":true,"gap":["g1"]}],` +
		`"marked":true,"past_top":true,"in_gap":true,"recent":["a"],"recent_last":1,"tail":["t"],"prev_page":2}`
	j, err := frontier.ReadJob([]byte(old))
	if err != nil || j.Validate() != nil {
		t.Fatalf("a nightly job of format 1: %+v %v / %v", j, err, j.Validate())
	}
	w := frontier.WalkOf(j)
	if j.Page != 1 || w.Page != 1 || w.Phase != engine.PhaseTop || w.StopAfterKnown != 2 || w.MaxPages != 9 || len(w.State.Marks) != 2 ||
		w.State.Marks[0].Page != 7 || !reflect.DeepEqual(w.State.Marks[1].Papers, []string{"g1"}) {
		t.Fatalf("the walk of a format-1 job: %+v", w)
	}
	if _, err := frontier.ReadJob([]byte(`{"v":3,"journal":5,"run_id":"r","page":1}`)); err == nil || !strings.Contains(err.Error(), "format 3") {
		t.Errorf("a job of format 3: %v", err)
	}
}

// A walk over pages of thousands of papers, each with a DOI, hands on
// jobs within the bounds (the papers of its last pages it keeps are
// capped), so the next worker runs them rather than refusing them.
func TestBigPagesWalkJobsStayInBounds(t *testing.T) {
	for _, n := range []int{1000, 1025, 2100, 5000} {
		w := engine.NewWalk(engine.Limits{StopAfterKnownPages: 1, MaxPages: 50}, 1, ledger.WalkState{})
		for p := 1; p <= 4; p++ {
			ps := make([]ledger.Paper, n)
			seen := make([]ledger.Delivery, n)
			for i := range ps {
				ps[i] = ledger.Paper{ID: fmt.Sprintf("p%d-%d", p, i), DOI: fmt.Sprintf("10.1/p%d.%d", p, i)}
			}
			next, ok := w.Next(engine.Delivered{Records: n, Papers: ps, Delivery: seen})
			if !ok {
				break
			}
			if err := frontier.WalkJob(5, "r1", next).Validate(); err != nil {
				t.Fatalf("%d papers a page, after page %d: %v", n, p, err)
			}
			w = next
		}
	}
}

// The ledger's bound on a page number is the commands'.
func TestPageBoundsAgree(t *testing.T) {
	if ledger.MaxPage != config.MaxPageNumber {
		t.Errorf("ledger.MaxPage %d, config.MaxPageNumber %d", ledger.MaxPage, config.MaxPageNumber)
	}
}
