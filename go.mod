module github.com/litcrawl/litcrawl

go 1.26.8

require (
	github.com/PuerkitoBio/goquery v1.13.0
	github.com/sourcegraph/conc v0.3.0
	github.com/spf13/cobra v1.10.2
	golang.org/x/net v0.62.0
	golang.org/x/text v0.44.0
)

require (
	github.com/andybalholm/cascadia v1.3.4 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	go.uber.org/atomic v1.7.0 // indirect
	go.uber.org/multierr v1.9.0 // indirect
)
