package main

// The sink drivers this program delivers to. Each registers its URL
// scheme with the sink package; a driver not imported here is not linked.
import (
	_ "github.com/litcrawl/litcrawl/sink/atom"
	_ "github.com/litcrawl/litcrawl/sink/jsonl"
	_ "github.com/litcrawl/litcrawl/sink/kafka"
	_ "github.com/litcrawl/litcrawl/sink/nats"
	_ "github.com/litcrawl/litcrawl/sink/postgres"
)
