// spdy-client drives probelet's CRI streaming server with client-go v0.36.3's own SPDY
// executor and port forwarder: the code kube-apiserver's stream translator and kubectl run
// against a kubelet or a runtime's streaming server. It is the oracle of
// tests/cri_streaming/go_client_test.ts (built by scripts/spdy-client.sh).
//
//	spdy-client exec URL [-stdin] [-tty] [-timeout 30s]
//	                                       stdin is forwarded; the remote stdout and stderr are
//	                                       copied out; the exit code is the remote one
//	spdy-client portforward URL PORT       stdin is sent to PORT through a forwarded local port;
//	                                       what comes back is printed
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: spdy-client exec|portforward URL ...")
		os.Exit(2)
	}
	mode, target := os.Args[1], os.Args[2]
	u, err := url.Parse(target)
	if err != nil {
		fail(err)
	}
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		fail(err)
	}
	switch mode {
	case "exec":
		flags := flag.NewFlagSet("exec", flag.ExitOnError)
		stdin := flags.Bool("stdin", false, "send standard input")
		tty := flags.Bool("tty", false, "ask for a terminal")
		timeout := flags.Duration("timeout", 30*time.Second, "give up after this long")
		_ = flags.Parse(os.Args[3:])
		os.Exit(runExec(u, transport, upgrader, *stdin, *tty, *timeout))
	case "portforward":
		if len(os.Args) < 4 {
			fail(errors.New("portforward needs a PORT"))
		}
		dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, "POST", u)
		os.Exit(runPortForward(dialer, os.Args[3]))
	default:
		fail(fmt.Errorf("unknown mode %q", mode))
	}
}

func runExec(u *url.URL, transport http.RoundTripper, upgrader spdy.Upgrader, stdin, tty bool, timeout time.Duration) int {
	executor, err := remotecommand.NewSPDYExecutorForTransports(transport, upgrader, "POST", u)
	if err != nil {
		fail(err)
	}
	options := remotecommand.StreamOptions{Stdout: os.Stdout, Tty: tty}
	if !tty {
		options.Stderr = os.Stderr
	}
	if stdin {
		options.Stdin = os.Stdin
	}
	if tty {
		sizes := make(chan remotecommand.TerminalSize, 1)
		sizes <- remotecommand.TerminalSize{Width: 100, Height: 40}
		options.TerminalSizeQueue = fixedSizes(sizes)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	err = executor.StreamWithContext(ctx, options)
	var exitErr exec.ExitError
	if errors.As(err, &exitErr) && exitErr.Exited() {
		fmt.Fprintf(os.Stderr, "spdy-client: %v\n", err)
		return exitErr.ExitStatus()
	}
	if err != nil {
		fail(err)
	}
	return 0
}

type fixedSizes chan remotecommand.TerminalSize

func (f fixedSizes) Next() *remotecommand.TerminalSize {
	size, ok := <-f
	if !ok {
		return nil
	}
	return &size
}

func runPortForward(dialer httpstream.Dialer, port string) int {
	stop := make(chan struct{})
	ready := make(chan struct{})
	forwarder, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"},
		[]string{"0:" + port}, stop, ready, io.Discard, os.Stderr)
	if err != nil {
		fail(err)
	}
	done := make(chan error, 1)
	go func() { done <- forwarder.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		fail(err)
	}
	ports, err := forwarder.GetPorts()
	if err != nil {
		fail(err)
	}
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
	if err != nil {
		fail(err)
	}
	if _, err := io.Copy(conn, os.Stdin); err != nil {
		fail(err)
	}
	_ = conn.(*net.TCPConn).CloseWrite()
	if _, err := io.Copy(os.Stdout, conn); err != nil {
		fail(err)
	}
	_ = conn.Close()
	close(stop)
	<-done
	return 0
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "spdy-client: %v\n", err)
	os.Exit(1)
}
