package receiver

import (
	"net"
	"sync/atomic"
	"testing"
)

// Listener is a TCP listener on 127.0.0.1 that counts and closes every connection: a
// test that must prove nothing was dialled (an egress guard, a refused $ref) checks
// Accepted. It is closed when the test ends.
type Listener struct {
	net.Listener
	accepted atomic.Int32
}

// Listen starts a Listener.
func Listen(t testing.TB) *Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &Listener{Listener: ln}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			_ = c.Close()
		}
	}()
	return l
}

// Accepted is how many connections reached the listener.
func (l *Listener) Accepted() int32 { return l.accepted.Load() }
