// As 16, but the run waits until its nested worker runs before it ends: does the run's
// exit stop a nested worker that had started (busy, and with a timer)?
// --- run
import { Worker } from "node:worker_threads";
const busy = `console.log("busy nested starts");
let seen = "";
const end = Date.now() + 2500;
while (Date.now() < end) {
  const now = Deno.env.get("TOOLSCRIPT_GATEWAY_URL");
  if (now !== seen) { seen = now; console.log("busy nested sees " + now); }
}
console.log("busy nested ends its loop");`;
const ticking = `setInterval(() => console.log("ticking nested alive"), 200);`;
for (const code of [busy, ticking]) new Worker(code, { eval: true }).unref();
await new Promise((resolve) => setTimeout(resolve, 900));
console.log("run 1 ends after 900 ms");
// --- run
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log("run 2 done");
// --- run
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log("run 3 done");
