// A Deno kept for several scripts, one node:worker_threads Worker per script, one at a time
// (bench/worker_host.py; measured, not part of toolscript). Arguments: the gateway's
// liveness URL (each worker's warm-up fetch) and, optionally, a heap limit in MB for each
// worker (the Worker's resourceLimits). Reads hand-overs on stdin, one JSON line each:
// {"url", "script", "nonce", "timeout_ms"?}; gives the waiting worker its script, and when
// that worker has exited (its event loop idle: its timers and fetches done; or it called
// Deno.exit, or threw) writes "\n<nonce> <exit code>\n" to stdout, then spawns the next
// worker. The nonce stays in the host: a script is never given it. A run past its
// timeout_ms is stopped with worker.terminate(). Stdin's end ends the host.
import { Worker } from "node:worker_threads";

const liveness = Deno.args[0];
const heapMb = Number(Deno.args[1] ?? 0);
const workerUrl = new URL("./worker.ts", import.meta.url);
const encoder = new TextEncoder();

function spawn(): Worker {
  const options = heapMb ? { resourceLimits: { maxOldGenerationSizeMb: heapMb } } : {};
  return new Worker(workerUrl, { workerData: { liveness }, ...options });
}

function write(text: string): void {
  const bytes = encoder.encode(text);
  let done = 0;
  while (done < bytes.length) done += Deno.stdout.writeSync(bytes.subarray(done));
}

let waiting = spawn();

function handOver(line: string): void {
  const { url, script, nonce, timeout_ms: timeoutMs } = JSON.parse(line);
  const worker = waiting;
  let errored = "";
  worker.on("error", (error: unknown) => {
    errored = error instanceof Error ? (error.stack ?? error.message) : String(error);
  });
  const timer = timeoutMs ? setTimeout(() => worker.terminate(), timeoutMs) : undefined;
  worker.once("exit", (code: number) => {
    clearTimeout(timer);
    if (errored) console.error(`worker error: ${errored}`);
    write(`\n${nonce} ${code}\n`);
    waiting = spawn();
  });
  worker.postMessage({ url, script });
}

let buffered = "";
const decoder = new TextDecoder();
for await (const part of Deno.stdin.readable) {
  buffered += decoder.decode(part, { stream: true });
  let newline: number;
  while ((newline = buffered.indexOf("\n")) >= 0) {
    const line = buffered.slice(0, newline);
    buffered = buffered.slice(newline + 1);
    if (line.trim()) handOver(line);
  }
}
await waiting.terminate();
Deno.exit(0);
