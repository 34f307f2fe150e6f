package engine

import (
	"testing"
	"testing/synctest"
	"time"
)

// Busy time is the time at least one page is in flight: overlapping
// pages count once, the idle time between them not at all, and a page's
// end counted twice changes nothing.
func TestBusySecondsLeaveIdleTimeOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSummary()
		a := s.pageBegins()
		time.Sleep(time.Second)
		b := s.pageBegins() // overlaps a
		time.Sleep(time.Second)
		a()
		a()
		time.Sleep(time.Second)
		b()
		time.Sleep(10 * time.Second) // idle: a worker waiting for jobs
		c := s.pageBegins()
		time.Sleep(2 * time.Second)
		if got := s.BusySeconds(); got != 5 {
			t.Errorf("busy %vs while a page is in flight, want 5", got)
		}
		c()
		time.Sleep(time.Minute)
		if got := s.BusySeconds(); got != 5 {
			t.Errorf("busy %vs, want 5", got)
		}
	})
}
