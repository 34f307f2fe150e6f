package parser

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

var debugFile = flag.String("debugfile", "", "print the segments of this page at each stage")

func dumpSegs(stage string, segs []*segment) {
	fmt.Println("==", stage)
	for i, s := range segs {
		j := ""
		if s.json != nil {
			j = s.json.plainTitle()
		}
		fmt.Printf(" seg %d json=%q\n", i, j)
		for _, l := range s.lines {
			fmt.Printf("   [%d m%d] %.70s\n", l.kind, l.mark, l.text)
		}
	}
}

func TestDebugSegments(t *testing.T) {
	if *debugFile == "" {
		t.Skip("-debugfile FILE")
	}
	data, _ := os.ReadFile(*debugFile)
	raw, page, _ := readLines(data, Options{})
	page.footerRaw = -1
	lines := classifyLines(raw, page)
	segs := segmentLines(lines)
	dumpSegs("segment", segs)
	segs = reconcile(segs)
	segs = reunite(segs)
	dumpSegs("reunite", segs)
}
