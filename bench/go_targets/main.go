// Command go_targets serves the probe scale benchmark's targets from Go's standard library, for
// `deno task bench -- --targets go`: plain HTTP and HTTPS (200 "ok" on any path), a TCP listener
// that accepts and closes, and a grpc.health.v1 Check answering SERVING over cleartext HTTP/2.
// Node's servers (bench/targets.mjs) cost ~0.6 ms of CPU per TLS handshake and ~0.5 ms per gRPC
// call, so at 1,000+ probes a second they, not the prober, take the CPU of this 2-core machine.
//
// It prints one JSON line {"http":[p...],"https":[...],"tcp":[...],"grpc":[...],"pid":n} once
// every listener is up, answers each {"stats":true} line on stdin with
// {"cpuSeconds":s,"counts":{...}}, and exits when stdin closes.
package main

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/big"
	mrand "math/rand"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

var counts struct{ http, https, tcp, grpc atomic.Int64 }

// A throwaway P-256 certificate for 127.0.0.1 and localhost, made in memory.
func throwawayCert() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(err)
	template := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "probelet-bench"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	must(err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Listens on a random port below the ephemeral range (32768+), where the probes' TIME_WAIT
// sockets could collide.
func listenLow() (net.Listener, int) {
	for attempt := 0; ; attempt++ {
		port := 20000 + mrand.Intn(12000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			return l, port
		}
		if attempt >= 50 {
			must(err)
		}
	}
}

func okHandler(counter *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		counter.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "2")
		_, _ = w.Write([]byte("ok"))
	})
}

// grpc.health.v1.Health/Check: one length-prefixed message, field 1 (status) = 1 (SERVING), then
// the grpc-status trailer. The request message is read and ignored.
func healthHandler(w http.ResponseWriter, r *http.Request) {
	counts.grpc.Add(1)
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/grpc")
	w.Header().Set("Trailer", "Grpc-Status")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte{0, 0, 0, 0, 2, 0x08, 0x01})
	w.Header().Set("Grpc-Status", "0")
}

func serve(server *http.Server, l net.Listener) {
	_ = server.Serve(l)
}

func acceptAndClose(l net.Listener) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		counts.tcp.Add(1)
		_ = c.Close()
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	must(syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "go_targets:", err)
		os.Exit(1)
	}
}

func main() {
	perKind := flag.Int("ports-per-kind", 4, "listeners per kind")
	flag.Parse()
	cert := throwawayCert()
	ports := map[string]any{"pid": os.Getpid()}
	var httpPorts, httpsPorts, tcpPorts, grpcPorts []int
	for i := 0; i < *perKind; i++ {
		l, port := listenLow()
		httpPorts = append(httpPorts, port)
		go serve(&http.Server{Handler: okHandler(&counts.http)}, l)

		l, port = listenLow()
		httpsPorts = append(httpsPorts, port)
		tlsListener := tls.NewListener(l, &tls.Config{
			Certificates: []tls.Certificate{cert},
			NextProtos:   []string{"http/1.1"},
		})
		go serve(&http.Server{Handler: okHandler(&counts.https)}, tlsListener)

		l, port = listenLow()
		tcpPorts = append(tcpPorts, port)
		go acceptAndClose(l)

		l, port = listenLow()
		grpcPorts = append(grpcPorts, port)
		protocols := new(http.Protocols)
		protocols.SetHTTP1(true)
		protocols.SetUnencryptedHTTP2(true)
		go serve(&http.Server{Handler: http.HandlerFunc(healthHandler), Protocols: protocols}, l)
	}
	ports["http"], ports["https"], ports["tcp"], ports["grpc"] = httpPorts, httpsPorts, tcpPorts, grpcPorts
	line, err := json.Marshal(ports)
	must(err)
	fmt.Println(string(line))

	stdin := bufio.NewScanner(os.Stdin)
	for stdin.Scan() {
		stats, err := json.Marshal(map[string]any{
			"cpuSeconds": cpuSeconds(),
			"counts": map[string]int64{
				"http": counts.http.Load(), "https": counts.https.Load(),
				"tcp": counts.tcp.Load(), "grpc": counts.grpc.Load(),
			},
		})
		must(err)
		fmt.Println(string(stats))
	}
}
