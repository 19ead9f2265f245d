//go:build !linux

package dist

import "net"

// listenLocal: same-host ranks use TCP where abstract Unix sockets do not exist.
func listenLocal() net.Listener { return nil }
