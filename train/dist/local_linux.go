package dist

import "net"

// listenLocal opens the rank's same-host ring listener: a Unix socket in the
// abstract namespace (no file to clean up; scoped to the network namespace, so
// ranks on simulated nodes still talk over their network).
func listenLocal() net.Listener {
	ln, err := net.Listen("unix", "@gptkit-ring-"+NewToken())
	if err != nil {
		return nil
	}
	return ln
}
