// The host's stdin carries the hand-overs (and their nonces): can a script's unref'd
// nested worker read the next run's hand-over by an async read? (No: an orphan's event
// loop does not turn. A synchronous read can: 18.)
// --- run
import { Worker } from "node:worker_threads";
const code = `
(async () => {
  try {
    for await (const part of Deno.stdin.readable) console.log("STOLEN: " + new TextDecoder().decode(part));
  } catch (error) {
    console.log("nested stdin: " + error.name + ": " + error.message);
  }
})();
`;
const worker = new Worker(code, { eval: true });
worker.unref();
try {
  const buffer = new Uint8Array(10);
  console.log(`run 1's own Deno.stdin is a ${typeof Deno.stdin.read}`);
} catch (error) {
  console.log(`stdin: ${(error as Error).name}`);
}
console.log("run 1 left a nested worker reading stdin");
// --- run
console.log("run 2 ran");
// --- run
console.log("run 3 ran");
