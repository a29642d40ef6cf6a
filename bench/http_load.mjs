// Keep-alive HTTP load client for the gateway benchmarks (Node's own http, no dependencies).
// usage: node http_load.mjs URL BODY_JSON SEQUENTIAL_CALLS CONCURRENCY SECONDS
import http from "node:http";

const [url, body, sequential, concurrency, seconds] = process.argv.slice(2);
const agent = new http.Agent({ keepAlive: true, maxSockets: Number(concurrency) });
const target = new URL(url);
const payload = Buffer.from(body);

function call() {
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: target.pathname,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": payload.length },
      },
      (response) => {
        const chunks = [];
        response.on("data", (chunk) => chunks.push(chunk));
        response.on("end", () =>
          response.statusCode === 200
            ? resolve()
            : reject(new Error(`HTTP ${response.statusCode}: ${Buffer.concat(chunks)}`)),
        );
      },
    );
    request.on("socket", (socket) => socket.setNoDelay(true));
    request.on("error", reject);
    request.end(payload);
  });
}

for (let i = 0; i < 50; i++) await call(); // warm-up
const latencies = [];
for (let i = 0; i < Number(sequential); i++) {
  const start = process.hrtime.bigint();
  await call();
  latencies.push(Number(process.hrtime.bigint() - start) / 1e6);
}
let done = 0;
const deadline = Date.now() + Number(seconds) * 1000;
const started = process.hrtime.bigint();
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (Date.now() < deadline) {
      await call();
      done++;
    }
  }),
);
const elapsed = Number(process.hrtime.bigint() - started) / 1e9;
console.log(JSON.stringify({ latencies, throughput: done / elapsed }));
