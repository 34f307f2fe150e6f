package state

import (
	"math/rand/v2"
	"testing"
)

// The recent index finds every hash it holds, with the run that recorded
// it, and no hash it does not hold, across the merges of its runs (it is
// given, as its callers give it, hashes it does not hold yet).
func TestRecentIndexGet(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	var x recentIndex[entry]
	model := map[uint64]uint32{}
	for batch := range uint32(200) {
		var ents []entry
		for range 1 + rng.IntN(40) {
			h := rng.Uint64N(5000)
			if _, ok := model[h]; ok {
				continue
			}
			ents = append(ents, entry{h: h, run: batch})
			model[h] = batch
		}
		x.add(ents)
	}
	for h := range uint64(5000) {
		e, ok := x.get(h)
		run, want := model[h]
		if ok != want || ok && e.run != run {
			t.Fatalf("get(%d) = %+v %v, want run %d %v", h, e, ok, run, want)
		}
	}
}
