/**
 * Raw HTTP/1.x responses with the verdict kubelet v1.36.3's HTTP prober gives for each (Go 1.26's
 * net/http client under `pkg/probe/http`): the result, the output, and the error a body read
 * returns. `{url}` in an output stands for the probed URL. Each expectation was taken from Go
 * serving the same bytes on 127.0.0.1 (a timeout of 3 s; no case comes near it).
 * Shared by the hand-written table test (response_test.ts) and as seeds for differential runs.
 * @module
 */
import type { ProbeResult } from "../../../src/probe/probe.ts";

/** One response and Go's verdict on it. */
export interface ResponseCase {
  /** What the case exercises. */
  name: string;
  /** The bytes the server sends (Latin-1: one character per byte), then it closes. */
  response: string;
  /** Kubelet's probe result. */
  result: ProbeResult;
  /** Kubelet's probe output; `{url}` is the probed URL. */
  output: string;
  /** The error `DoHTTPProbe` returns from reading the body, if any. */
  error?: string;
}

/** Go's verdicts, grouped as net/http reads them: framing, chunks, trailer, head, status line. */
export const responseCases: ResponseCase[] = [
  {
    name: "Content-Length with letters",
    response: "HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\nok",
    result: "failure",
    output: 'Get "{url}": net/http: HTTP/1.x transport connection broken: bad Content-Length "abc"',
  },
  {
    name: "negative Content-Length",
    response: "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\nok",
    result: "failure",
    output: 'Get "{url}": net/http: HTTP/1.x transport connection broken: bad Content-Length "-1"',
  },
  {
    name: "Content-Length with a plus sign",
    response: "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok",
    result: "failure",
    output: 'Get "{url}": net/http: HTTP/1.x transport connection broken: bad Content-Length "+2"',
  },
  {
    name: "Content-Length of two numbers",
    response: "HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\nok",
    result: "failure",
    output: 'Get "{url}": net/http: HTTP/1.x transport connection broken: bad Content-Length "1 2"',
  },
  {
    name: "empty Content-Length",
    response: "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: invalid empty Content-Length ""',
  },
  {
    name: "two different Content-Length values (smuggling)",
    response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: http: message cannot contain multiple Content-Length headers; got ["2" "3"]',
  },
  {
    name: "repeated equal Content-Length values, spaces trimmed",
    response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length:  2 \r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "Content-Length as a list",
    response: "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: bad Content-Length "2, 2"',
  },
  {
    name: "Content-Length above 2^63-1",
    response: "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775808\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: bad Content-Length "9223372036854775808"',
  },
  {
    name: "Content-Length of 2^63-1 and a short body",
    response: "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\nok",
    result: "failure",
    output: "",
    error: "unexpected EOF",
  },
  {
    name: "invalid Content-Length on a 204",
    response: "HTTP/1.1 204 No Content\r\nContent-Length: x\r\n\r\n",
    result: "failure",
    output: 'Get "{url}": net/http: HTTP/1.x transport connection broken: bad Content-Length "x"',
  },
  {
    name: "invalid Content-Length beside chunked",
    response:
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: x\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output: 'Get "{url}": net/http: HTTP/1.x transport connection broken: bad Content-Length "x"',
  },
  {
    name: "valid Content-Length ignored beside chunked",
    response:
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    result: "success",
    output: "ok",
  },
  {
    name: "space before the colon: not a Content-Length, body until EOF",
    response: "HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nokay",
    result: "success",
    output: "okay",
  },
  {
    name: "Transfer-Encoding gzip unsupported",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: unsupported transfer encoding: "gzip"',
  },
  {
    name: "Transfer-Encoding gzip, chunked unsupported",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: unsupported transfer encoding: "gzip, chunked"',
  },
  {
    name: "Transfer-Encoding header twice",
    response:
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: too many transfer encodings: ["chunked" "chunked"]',
  },
  {
    name: "Transfer-Encoding CHUNKED in upper case",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    result: "success",
    output: "ok",
  },
  {
    name: "Transfer-Encoding identity unsupported",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: unsupported transfer encoding: "identity"',
  },
  {
    name: "empty Transfer-Encoding",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: unsupported transfer encoding: ""',
  },
  {
    name: "Transfer-Encoding ignored on HTTP/1.0",
    response: "HTTP/1.0 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "chunked 204 has no body",
    response: "HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
    result: "success",
    output: "",
  },
  {
    name: "Trailer announcing Content-Length",
    response:
      "HTTP/1.1 200 OK\r\nTrailer: Content-Length\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: bad trailer key "Content-Length"',
  },
  {
    name: "Trailer header ignored without chunked",
    response: "HTTP/1.1 200 OK\r\nTrailer: Content-Length\r\nContent-Length: 2\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "chunk size of 17 hex digits",
    response:
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000002\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output: "",
    error: "http chunk length too large",
  },
  {
    name: "chunk size of 16 hex digits",
    response:
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0000000000000002\r\nok\r\n0\r\n\r\n",
    result: "success",
    output: "ok",
  },
  {
    name: "chunk size after a space",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n 2\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output: "",
    error: "invalid byte in chunk length",
  },
  {
    name: "chunk size with trailing whitespace",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 \t\r\nok\r\n0\r\n\r\n",
    result: "success",
    output: "ok",
  },
  {
    name: "chunk size with a space before the extension",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2 ;a=b\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output: "",
    error: "invalid byte in chunk length",
  },
  {
    name: "chunk size with 0x",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0x2\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output: "",
    error: "invalid byte in chunk length",
  },
  {
    name: "empty chunk size",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output: "",
    error: "empty hex number for chunk length",
  },
  {
    name: "chunk line ending in a bare LF",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n0\r\n\r\n",
    result: "failure",
    output: "",
    error: "chunked line ends with bare LF",
  },
  {
    name: "chunk line with a CR inside",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r;\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output: "",
    error: "invalid CR in chunked line",
  },
  {
    name: "chunk data longer than its size",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX\r\n0\r\n\r\n",
    result: "failure",
    output: "",
    error: "malformed chunked encoding",
  },
  {
    name: "chunk line longer than 4 KiB",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;" + "a".repeat(5000) +
      "\r\nok\r\n0\r\n\r\n",
    result: "failure",
    output: "",
    error: "header line too long",
  },
  {
    name: "connection ends inside chunk data",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nok",
    result: "failure",
    output: "",
    error: "unexpected EOF",
  },
  {
    name: "connection ends before the next chunk size",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n",
    result: "failure",
    output: "",
    error: "unexpected EOF",
  },
  {
    name: "chunk extensions beyond 16 KiB of non-data",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
      ("1;" + "a".repeat(74) + "\r\nx\r\n").repeat(300) + "0\r\n\r\n",
    result: "failure",
    output: "",
    error: "chunked encoding contains too much non-data",
  },
  {
    name: "trailer field",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: y\r\n\r\n",
    result: "success",
    output: "ok",
  },
  {
    name: "connection ends after the last chunk",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n",
    result: "failure",
    output: "",
    error: "http: unexpected EOF reading trailer",
  },
  {
    name: "connection ends inside the trailer",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: y\r\n",
    result: "failure",
    output: "",
    error: "http: suspiciously long trailer after chunked body",
  },
  {
    name: "trailer line without a colon",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nbad\r\n\r\n",
    result: "failure",
    output: "",
    error: 'malformed MIME header: missing colon: "bad"',
  },
  {
    name: "trailer ending in bare LFs",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: y\n\n",
    result: "failure",
    output: "",
    error: "http: suspiciously long trailer after chunked body",
  },
  {
    name: "trailer longer than 4 KiB",
    response: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: " +
      "a".repeat(5000) + "\r\n\r\n",
    result: "failure",
    output: "",
    error: "http: suspiciously long trailer after chunked body",
  },
  {
    name: "NUL in a trailer value",
    response:
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: a\x00b\r\n\r\n",
    result: "failure",
    output: "",
    error: 'malformed MIME header line: "X-T: a\\x00b"',
  },
  {
    name: "NUL in a header value",
    response: "HTTP/1.1 200 OK\r\nX-A: a\x00b\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed MIME header line: "X-A: a\\x00b"',
  },
  {
    name: "bare CR in a header value",
    response: "HTTP/1.1 200 OK\r\nX-A: a\rb\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed MIME header line: "X-A: a\\rb"',
  },
  {
    name: "bad value byte: Go quotes the line with the name canonicalised",
    response: "HTTP/1.1 200 OK\r\nx-a: a\rb\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed MIME header line: "X-A: a\\rb"',
  },
  {
    name: "DEL in a header value",
    response: "HTTP/1.1 200 OK\r\nX-A: ab\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed MIME header line: "X-A: a\\x7fb"',
  },
  {
    name: "obs-text byte in a header value",
    response: "HTTP/1.1 200 OK\r\nX-A: aÿb\r\nContent-Length: 2\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "tab in a header value",
    response: "HTTP/1.1 200 OK\r\nX-A: a\tb\r\nContent-Length: 2\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "@ in a header name",
    response: "HTTP/1.1 200 OK\r\nX@A: b\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed MIME header line: "X@A: b"',
  },
  {
    name: "non-ASCII byte in a header name",
    response: "HTTP/1.1 200 OK\r\nXé: b\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed MIME header line: "X\\xe9: b"',
  },
  {
    name: "space in a header name",
    response: "HTTP/1.1 200 OK\r\nX A: b\r\nContent-Length: 2\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "empty header name",
    response: "HTTP/1.1 200 OK\r\n: b\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed MIME header line: ": b"',
  },
  {
    name: "header line without a colon",
    response: "HTTP/1.1 200 OK\r\nNoColon\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed MIME header: missing colon: "NoColon"',
  },
  {
    name: "folded header line (obs-fold)",
    response: "HTTP/1.1 200 OK\r\nX-A: a\r\n  b\r\nContent-Length: 2\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "folded Content-Length value",
    response: "HTTP/1.1 200 OK\r\nContent-Length:\r\n 2\r\n\r\nokay",
    result: "success",
    output: "ok",
  },
  {
    name: "first header line starting with a space",
    response: "HTTP/1.1 200 OK\r\n X-A: b\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed MIME header initial line: " X-A: b"',
  },
  {
    name: "first header line starting with a space, over 80 bytes",
    response: "HTTP/1.1 200 OK\r\n X-A: " + "b".repeat(100) + "\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output: 'Get "{url}": net/http: HTTP/1.x transport connection broken: message too large',
  },
  {
    name: "bare LF line ends",
    response: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "bare LF and CRLF mixed",
    response: "HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "six 1xx answers before the final one",
    response:
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "101 is final",
    response: "HTTP/1.1 101 Switching Protocols\r\n\r\n",
    result: "failure",
    output: "HTTP probe failed with statuscode: 101",
  },
  {
    name: "status code with a plus sign",
    response: "HTTP/1.1 +20 OK\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output: "HTTP probe failed with statuscode: 20",
  },
  {
    name: "negative status code",
    response: "HTTP/1.1 -20 OK\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed HTTP status code "-20"',
  },
  {
    name: "four-digit status code",
    response: "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed HTTP status code "2000"',
  },
  {
    name: "status code checked before the version",
    response: "FOO 2x0 OK\r\n\r\n",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed HTTP status code "2x0"',
  },
  {
    name: "lower-case HTTP version",
    response: "http/1.1 200 OK\r\n\r\n",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed HTTP version "http/1.1"',
  },
  {
    name: "two-digit minor version",
    response: "HTTP/1.10 200 OK\r\n\r\n",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed HTTP version "HTTP/1.10"',
  },
  {
    name: "HTTP/2.0 status line",
    response: "HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "HTTP/0.9 status line",
    response: "HTTP/0.9 200 OK\r\nContent-Length: 2\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "status line without a reason",
    response: "HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "two spaces before the status code",
    response: "HTTP/1.1  200 OK\r\nContent-Length: 2\r\n\r\nok",
    result: "success",
    output: "ok",
  },
  {
    name: "connection ends in the status line",
    response: "HTTP/1.1 200 OK",
    result: "failure",
    output: 'Get "{url}": net/http: HTTP/1.x transport connection broken: unexpected EOF',
  },
  {
    name: "connection ends inside a header name",
    response: "HTTP/1.1 200 OK\r\nContent-Le",
    result: "failure",
    output:
      'Get "{url}": net/http: HTTP/1.x transport connection broken: malformed MIME header: missing colon: "Content-Le"',
  },
  {
    name: "connection ends after a header line",
    response: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",
    result: "failure",
    output: 'Get "{url}": net/http: HTTP/1.x transport connection broken: unexpected EOF',
  },
  {
    name: "connection ends after a header without its line end",
    response: "HTTP/1.1 200 OK\r\nX-A: b",
    result: "failure",
    output: 'Get "{url}": net/http: HTTP/1.x transport connection broken: unexpected EOF',
  },
  {
    name: "connection closed without an answer",
    response: "",
    result: "failure",
    output: 'Get "{url}": EOF',
  },
  {
    name: "body shorter than Content-Length",
    response: "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok",
    result: "failure",
    output: "",
    error: "unexpected EOF",
  },
  {
    name: "HTTP/1.0 body until the connection ends",
    response: "HTTP/1.0 200 OK\r\n\r\nuntil close",
    result: "success",
    output: "until close",
  },
  {
    name: "status 500",
    response: "HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\nok",
    result: "failure",
    output: "HTTP probe failed with statuscode: 500",
  },
];
