package frontier_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/litcrawl/litcrawl/engine"
	"github.com/litcrawl/litcrawl/frontier"
)

// fill sets every field of v, recursively, to a value that is not its
// zero (distinct per field, so two swapped fields show too).
func fill(t *testing.T, v reflect.Value, n *int) {
	t.Helper()
	*n++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if !v.Type().Field(i).IsExported() {
				t.Fatalf("%s.%s is unexported: a job cannot carry it", v.Type(), v.Type().Field(i).Name)
			}
			fill(t, v.Field(i), n)
		}
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		fill(t, s.Index(0), n)
		fill(t, s.Index(1), n)
		v.Set(s)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.String:
		v.SetString("paper-" + string(rune('a'+*n%26)))
	default:
		t.Fatalf("fill: a field of kind %s: teach the test how to fill it", v.Kind())
	}
}

// TestJobCarriesTheWalkWhole: every field of engine.Walk survives a
// nightly job's trip through JSON from one worker to the next, so a field
// added to the walk is never lost across the fleet.
func TestJobCarriesTheWalkWhole(t *testing.T) {
	var w engine.Walk
	n := 0
	fill(t, reflect.ValueOf(&w).Elem(), &n)
	job := frontier.Job{Journal: 7, RunID: "r1", Nightly: true, Walk: w, PrevPage: 3}
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	var back frontier.Job
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, job) {
		t.Fatalf("the walk did not survive the job's round trip:\nsent %+v\ngot  %+v\njson %s", job.Walk, back.Walk, data)
	}
	for i := range reflect.TypeOf(w).NumField() {
		f := reflect.TypeOf(w).Field(i)
		if tag := f.Tag.Get("json"); tag == "" || tag == "-" {
			t.Errorf("engine.Walk.%s has no JSON name: name it in the wire format", f.Name)
		}
	}
}

// TestPageJobCarriesOnlyItsPage: a page job's JSON names its journal,
// page and run only, and a page job with walk fields is refused.
func TestPageJobCarriesOnlyItsPage(t *testing.T) {
	data, _ := json.Marshal(frontier.PageJob(4, 9, "r2"))
	if got, want := string(data), `{"journal":4,"run_id":"r2","page":9}`; got != want {
		t.Fatalf("page job JSON %s, want %s", got, want)
	}
	j := frontier.PageJob(4, 9, "r2")
	j.Below = true
	if err := j.Validate(); err == nil {
		t.Fatal("a page job carrying a walk field was accepted")
	}
}
