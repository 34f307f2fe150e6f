package main

import (
	"net/http"
	"regexp"
	"strconv"

	"github.com/litcrawl/litcrawl/testsite"
)

var rePage = regexp.MustCompile(`^/literature_d(\d+)(?:_(\d+))?\.htm$`)

func main() {
	http.ListenAndServe("127.0.0.1:18090", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := rePage.FindStringSubmatch(r.URL.Path)
		if m == nil {
			http.NotFound(w, r)
			return
		}
		p := 1
		if m[2] != "" {
			p, _ = strconv.Atoi(m[2])
		}
		w.Write(testsite.Synth(1001, p, 20))
	}))
}
