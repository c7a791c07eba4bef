/**
 * Probe targets for the scale benchmark, run by Node in a process of their own so that their CPU is
 * not counted against probelet: plain HTTP, HTTPS with a throwaway self-signed certificate, a bare
 * TCP listener and a grpc.health.v1 server answering SERVING, all on 127.0.0.1.
 *
 * Usage: `node bench/targets.mjs [--ports-per-kind 4]`. Prints one JSON line
 * `{"http":[p...],"https":[...],"tcp":[...],"grpc":[...],"pid":n}` once every listener is up, then
 * serves until stdin closes or SIGTERM. `{"stats":true}` on stdin answers with a JSON line of the
 * process's CPU seconds and request counts.
 * @module
 */
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import readline from "node:readline";
import grpc from "@grpc/grpc-js";

const HOST = "127.0.0.1";
const argv = process.argv.slice(2);
const perKindFlag = argv.indexOf("--ports-per-kind");
const PORTS_PER_KIND = perKindFlag >= 0 ? Number(argv[perKindFlag + 1]) : 4;

const counts = { http: 0, https: 0, tcp: 0, grpc: 0 };

/** A throwaway P-256 certificate for 127.0.0.1, made with openssl and deleted right away. */
function throwawayCert() {
  const dir = mkdtempSync(join(tmpdir(), "probelet-bench-"));
  try {
    execFileSync("openssl", [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=probelet-bench",
      "-addext",
      "subjectAltName=IP:127.0.0.1,DNS:localhost",
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ], { stdio: "ignore" });
    return {
      key: readFileSync(join(dir, "key.pem")),
      cert: readFileSync(join(dir, "cert.pem")),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Ports below the ephemeral range (32768+), picked at random and retried on EADDRINUSE. */
function randomPort() {
  return 20000 + Math.floor(Math.random() * 12000);
}

function listen(server) {
  return new Promise((resolve, reject) => {
    let attempts = 0;
    const tryOnce = () => {
      const port = randomPort();
      const onError = (err) => {
        server.off("listening", onListening);
        if (err.code === "EADDRINUSE" && ++attempts < 50) tryOnce();
        else reject(err);
      };
      const onListening = () => {
        server.off("error", onError);
        resolve(port);
      };
      server.once("error", onError);
      server.once("listening", onListening);
      server.listen({ host: HOST, port, backlog: 4096 });
    };
    tryOnce();
  });
}

function handler(kind) {
  return (_req, res) => {
    counts[kind]++;
    res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": "2" });
    res.end("ok");
  };
}

// grpc.health.v1.Health/Check with hand-rolled protobuf: the response is field 1 (status) = 1
// (SERVING), i.e. the two bytes 0x08 0x01; the request (field 1: service name) is not needed.
const SERVING = Buffer.from([0x08, 0x01]);
const healthService = {
  Check: {
    path: "/grpc.health.v1.Health/Check",
    requestStream: false,
    responseStream: false,
    requestSerialize: (b) => b,
    requestDeserialize: (b) => b,
    responseSerialize: (b) => b,
    responseDeserialize: (b) => b,
  },
};

function grpcServer() {
  return new Promise((resolve, reject) => {
    const server = new grpc.Server();
    server.addService(healthService, {
      Check: (_call, callback) => {
        counts.grpc++;
        callback(null, SERVING);
      },
    });
    let attempts = 0;
    const tryOnce = () => {
      const port = randomPort();
      server.bindAsync(`${HOST}:${port}`, grpc.ServerCredentials.createInsecure(), (err) => {
        if (err && ++attempts < 50) return tryOnce();
        if (err) return reject(err);
        resolve(port);
      });
    };
    tryOnce();
  });
}

async function main() {
  const tls = throwawayCert();
  const ports = { http: [], https: [], tcp: [], grpc: [], pid: process.pid };
  const servers = [];
  for (let i = 0; i < PORTS_PER_KIND; i++) {
    const h = http.createServer({ keepAlive: false }, handler("http"));
    const hs = https.createServer({ ...tls, keepAlive: false }, handler("https"));
    const t = net.createServer((socket) => {
      counts.tcp++;
      socket.on("error", () => {});
      socket.end();
    });
    for (const s of [h, hs, t]) servers.push(s);
    ports.http.push(await listen(h));
    ports.https.push(await listen(hs));
    ports.tcp.push(await listen(t));
    ports.grpc.push(await grpcServer());
  }
  process.stdout.write(JSON.stringify(ports) + "\n");

  const rl = readline.createInterface({ input: process.stdin });
  rl.on("line", (line) => {
    if (!line.includes("stats")) return;
    const u = process.cpuUsage();
    process.stdout.write(
      JSON.stringify({ cpuSeconds: (u.user + u.system) / 1e6, counts }) + "\n",
    );
  });
  rl.on("close", () => process.exit(0));
  process.on("SIGTERM", () => process.exit(0));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
