// kubelet-handlers runs kubelet v1.36.3's own HTTP and gRPC probe handlers
// (k8s.io/kubernetes/pkg/probe/http and pkg/probe/grpc) on cases read from stdin, for the
// differential test of probelet's handlers (tests/probe/differential_test.ts).
//
// Input: one JSON object per line, e.g.
//
//	{"id":1,"kind":"http","url":"http://127.0.0.1:8080/healthz","timeoutMs":1000}
//	{"id":2,"kind":"grpc","host":"127.0.0.1","port":9090,"service":"","timeoutMs":1000}
//
// Output: one JSON object per case, in completion order (cases run concurrently, one goroutine
// each, so the caller decides the parallelism by how many it sends before waiting):
//
//	{"id":1,"result":"success","output":"ok","error":"","elapsedMs":3}
//
// result is kubelet's probe.Result ("success", "warning", "failure", "unknown"); error is the
// handler's error return ("" when nil). The program only probes: the targets are the caller's.
// It exits when stdin closes, once every case has answered.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sync"
	"time"

	"k8s.io/kubernetes/pkg/probe"
	grpcprobe "k8s.io/kubernetes/pkg/probe/grpc"
	httpprobe "k8s.io/kubernetes/pkg/probe/http"
)

// probeCase is one input line.
type probeCase struct {
	ID   int64  `json:"id"`
	Kind string `json:"kind"`
	// HTTP: the URL, extra request headers, kubelet's --follow-non-local-redirects (default false).
	URL                     string            `json:"url"`
	Headers                 map[string]string `json:"headers"`
	FollowNonLocalRedirects bool              `json:"followNonLocalRedirects"`
	// gRPC: the target and the health service name.
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Service string `json:"service"`
	// Both: the probe's timeoutSeconds in milliseconds.
	TimeoutMs int64 `json:"timeoutMs"`
}

// verdict is one output line.
type verdict struct {
	ID        int64  `json:"id"`
	Result    string `json:"result"`
	Output    string `json:"output"`
	Error     string `json:"error"`
	ElapsedMs int64  `json:"elapsedMs"`
}

func main() {
	// Handlers are stateless; one of each serves every case, as in kubelet's prober.
	httpProbers := map[bool]httpprobe.Prober{false: httpprobe.New(false), true: httpprobe.New(true)}
	grpcProber := grpcprobe.New()

	var out sync.Mutex
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetEscapeHTML(false)
	emit := func(v verdict) {
		out.Lock()
		defer out.Unlock()
		if err := encoder.Encode(v); err != nil {
			fmt.Fprintf(os.Stderr, "kubelet-handlers: write: %v\n", err)
			os.Exit(1)
		}
	}

	var running sync.WaitGroup
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for scanner.Scan() {
		var c probeCase
		if err := json.Unmarshal(scanner.Bytes(), &c); err != nil {
			fmt.Fprintf(os.Stderr, "kubelet-handlers: bad case %q: %v\n", scanner.Text(), err)
			os.Exit(2)
		}
		running.Add(1)
		go func() {
			defer running.Done()
			emit(run(c, httpProbers, grpcProber))
		}()
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "kubelet-handlers: read: %v\n", err)
		os.Exit(1)
	}
	running.Wait()
}

// run probes one case with kubelet's handler.
func run(c probeCase, httpProbers map[bool]httpprobe.Prober, grpcProber grpcprobe.Prober) verdict {
	timeout := time.Duration(c.TimeoutMs) * time.Millisecond
	start := time.Now()
	var result probe.Result
	var output string
	var err error
	switch c.Kind {
	case "http":
		result, output, err = probeHTTP(c, httpProbers[c.FollowNonLocalRedirects], timeout)
	case "grpc":
		result, output, err = grpcProber.Probe(c.Host, c.Service, c.Port, timeout)
	default:
		result, err = probe.Unknown, fmt.Errorf("unknown case kind %q", c.Kind)
	}
	v := verdict{
		ID:        c.ID,
		Result:    string(result),
		Output:    output,
		ElapsedMs: time.Since(start).Milliseconds(),
	}
	if err != nil {
		v.Error = err.Error()
	}
	return v
}

// probeHTTP builds the request as kubelet's prober does for an httpGet probe (User-Agent
// kube-probe/<major>.<minor>, Accept */*, a Host header becomes Request.Host) and probes it.
func probeHTTP(c probeCase, prober httpprobe.Prober, timeout time.Duration) (probe.Result, string, error) {
	u, err := url.Parse(c.URL)
	if err != nil {
		return probe.Unknown, "", err
	}
	headers := http.Header{}
	for name, value := range c.Headers {
		headers.Add(name, value)
	}
	req, err := httpprobe.NewProbeRequest(u, headers)
	if err != nil {
		return probe.Unknown, "", err
	}
	return prober.Probe(req, timeout)
}
