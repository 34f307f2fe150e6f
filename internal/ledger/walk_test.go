package ledger_test

import (
	"reflect"
	"testing"

	"github.com/litcrawl/litcrawl/internal/ledger"
)

// A walk state of this version round-trips; one of the version before (its
// marks alone, a JSON array) reads as a state with those marks.
func TestWalkStateForms(t *testing.T) {
	s := ledger.WalkState{Head: []string{"h1", "doi:10.1/h"}, Marks: []ledger.WalkMark{{Page: 3, Papers: []string{"p"}, Offset: 9, From: 4, Stuck: 1, End: []string{"e"}}},
		Audit: ledger.Audit{Next: 2, Since: 5, Round: 4, Pages: 7}}
	b, err := ledger.EncodeWalkState(s)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ledger.DecodeWalkState(b); err != nil || !reflect.DeepEqual(got, s) {
		t.Errorf("round trip: %+v %v", got, err)
	}
	old, err := ledger.DecodeWalkState([]byte(` [{"page":3,"papers":["a","doi:10.1/x"]},{"page":9,"papers":["q"],"loose":true,"gap":["g"]}]`))
	if err != nil || len(old.Marks) != 2 || old.Marks[1].Page != 9 || old.Head != nil || old.Audit != (ledger.Audit{}) {
		t.Errorf("an earlier version's marks: %+v %v", old, err)
	}
	for _, bad := range []string{``, `[`, `{"marks":7}`, `"x"`} {
		if _, err := ledger.DecodeWalkState([]byte(bad)); err == nil {
			t.Errorf("%q read as a walk state", bad)
		}
	}
}

// FuzzDecodeWalkState: a stored walk state is read back from a file or a
// bucket someone else may have written; decoding never panics, and what
// decodes encodes and decodes to the same.
func FuzzDecodeWalkState(f *testing.F) {
	f.Add([]byte(`{"head":["a"],"marks":[{"page":1,"papers":["x"],"end":["e"]}],"audit":{"next":3}}`))
	f.Add([]byte(`[{"page":3,"papers":["a"]}]`))
	f.Add([]byte(`{"audit":{"round":-1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ledger.DecodeWalkState(b)
		if err != nil {
			return
		}
		again, err := ledger.EncodeWalkState(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ledger.DecodeWalkState(again)
		if err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("%s: decoded %+v, again %+v (%v)", b, s, back, err)
		}
	})
}
