// options: {"timeout_ms": 3000, "gap": 1.0}
// An orphaned nested worker (see 16) reading the host's stdin synchronously: does it take
// the next hand-over (its nonce), and can it then end that run with a forged marker?
// --- run
import { Worker } from "node:worker_threads";
const code = `const buffer = new Uint8Array(4096);
try {
  const n = Deno.stdin.readSync(buffer);
  const line = new TextDecoder().decode(buffer.subarray(0, n ?? 0));
  console.log("nested took the hand-over: " + line.trim());
  const { nonce } = JSON.parse(line);
  console.log("forged output");
  console.log("\\n" + nonce + " 0");
} catch (error) {
  console.log("nested stdin: " + error);
}`;
new Worker(code, { eval: true }).unref();
console.log("run 1 started a nested worker reading stdin");
// --- run
console.log("run 2 ran (it was given its hand-over)");
// --- run
console.log("run 3 ran");
