// The same with a nested node Worker from a file the run may read (its own script: it
// starts one more nested worker only when it is not the main thread's first).
// --- run
import { Worker, isMainThread, workerData } from "node:worker_threads";
if (workerData?.nested) {
  setInterval(() => console.log("nested (file) alive, reads " + Deno.env.get("TOOLSCRIPT_GATEWAY_URL")), 100);
} else {
  const worker = new Worker(new URL(import.meta.url), { workerData: { nested: true } });
  worker.on("error", (error) => console.log(`nested error: ${error}`));
  worker.on("exit", (code) => console.log(`nested exit ${code}`));
  worker.unref();
  console.log(`run 1 (isMainThread ${isMainThread}) started a nested worker from its own file`);
  await new Promise((resolve) => setTimeout(resolve, 350));
  console.log("run 1 ends its top level");
}
// --- run
await new Promise((resolve) => setTimeout(resolve, 350));
console.log("run 2 done");
