package state

import (
	"math/rand/v2"
	"testing"
)

// The recent index finds every hash it holds, with the run that recorded
// it, and no hash it does not hold, across the merges of its runs and the
// rebuilds of its filter (it is given, as its callers give it, hashes it
// does not hold yet): small hashes (few distinct bits, which the filter
// must still spread) and full 64-bit ones, as the store's are.
func TestRecentIndexGet(t *testing.T) {
	for _, tt := range []struct {
		name string
		hash func(rng *rand.Rand) uint64
	}{
		{"small hashes", func(rng *rand.Rand) uint64 { return rng.Uint64N(5000) }},
		{"64-bit hashes", func(rng *rand.Rand) uint64 { return rng.Uint64() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(41, 1))
			var x recentIndex[entry]
			if _, ok := x.get(7); ok {
				t.Fatal("an empty index holds 7")
			}
			model := map[uint64]uint32{}
			var asked []uint64
			for batch := range uint32(200) {
				var ents []entry
				for range 1 + rng.IntN(40) {
					h := tt.hash(rng)
					asked = append(asked, h, tt.hash(rng))
					if _, ok := model[h]; ok {
						continue
					}
					ents = append(ents, entry{h: h, run: batch})
					model[h] = batch
				}
				x.add(ents)
			}
			for _, h := range asked {
				e, ok := x.get(h)
				run, want := model[h]
				if ok != want || ok && e.run != run {
					t.Fatalf("get(%d) = %+v %v, want run %d %v", h, e, ok, run, want)
				}
			}
		})
	}
}
