package app

import (
	"bytes"
	"compress/gzip"
	"testing"

	"github.com/litcrawl/litcrawl/internal/testsite"
	"github.com/litcrawl/litcrawl/sink"
)

// A held page comes from the quarantine file, which anyone with the state
// directory can edit: any bytes as its gzip parse again or fail, within
// the bound, never a panic.
func FuzzReparse(f *testing.F) {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(testsite.Synth(77, 1, 3))
	w.Close()
	f.Add(b.Bytes())
	f.Add([]byte{0x1f, 0x8b})
	f.Add([]byte("not gzip"))
	f.Fuzz(func(t *testing.T, gz []byte) {
		page, err := reparse(&sink.HeldPage{URL: "https://m.booksci.cn/literature_d77.htm", Journal: 77, Page: 1, Gzip: gz}, "reparse-test", 8<<20)
		if err == nil && page == nil {
			t.Fatal("no page and no error")
		}
	})
}
