//go:build !linux

package dist

import "net"

// Without Linux there are no same-host Unix socket links (listenLocal), so every
// link is a stream.
func newSender(conn net.Conn, shared bool) (sender, error) { return &streamLink{conn: conn}, nil }

func newReceiver(conn net.Conn) (receiver, error) { return &streamLink{conn: conn}, nil }
