// A nested node Worker (unref'd) whose top level is a busy loop, or a fetch with the
// environment's URL: does it run on into later runs, and can it call with their token?
// --- run
import { Worker } from "node:worker_threads";
const busy = `let seen = "";
const end = Date.now() + 2500;
while (Date.now() < end) {
  const now = Deno.env.get("TOOLSCRIPT_GATEWAY_URL");
  if (now !== seen) { seen = now; console.log("busy nested sees " + now); }
}
console.log("busy nested ends its loop");`;
const caller = `const url = Deno.env.get("TOOLSCRIPT_GATEWAY_URL");
console.log("calling nested starts a fetch with " + url);
fetch(url + "/tools/time__get_current_time", { method: "POST", body: "{}" })
  .then((r) => r.text()).then((t) => console.log("calling nested got an answer: " + t), (e) => console.log("calling nested: " + e));`;
for (const code of [busy, caller]) {
  const worker = new Worker(code, { eval: true });
  worker.unref();
}
console.log("run 1 started two nested workers");
// --- run
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log("run 2 done");
// --- run
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log("run 3 done");
// --- run
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log("run 4 done");
