// options: {"timeout_ms": 1500}
// A nested worker kept referenced keeps its run alive until the host's terminate(): does
// terminating the run's worker stop a busy nested worker?
// --- run
import { Worker } from "node:worker_threads";
const busy = `console.log("busy nested starts");
let seen = "";
const end = Date.now() + 3000;
while (Date.now() < end) {
  const now = Deno.env.get("TOOLSCRIPT_GATEWAY_URL");
  if (now !== seen) { seen = now; console.log("busy nested sees " + now); }
}
console.log("busy nested ends its loop");`;
new Worker(busy, { eval: true });
console.log("run 1 started a busy nested worker and keeps it referenced");
// --- run
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log("run 2 done");
// --- run
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log("run 3 done");
