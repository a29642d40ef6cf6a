// A node Worker the script starts and unref()s, from a data: URL, from eval, from a blob:
// URL: does it outlive the run, print into the next run, read the next run's URL (the
// token)? (A nested node Worker's module runs about 500 ms after its spawn, Deno 2.9.8.)
// --- run
import { Worker } from "node:worker_threads";
const code = `console.log("nested top level runs, reads " + Deno.env.get("TOOLSCRIPT_GATEWAY_URL"));
setInterval(() => console.log("nested alive, reads " + Deno.env.get("TOOLSCRIPT_GATEWAY_URL")), 100);`;
const sources: [string, () => Worker][] = [
  ["data:", () => new Worker(new URL(`data:text/javascript,${encodeURIComponent(code)}`))],
  ["eval", () => new Worker(code, { eval: true })],
  ["blob:", () => new Worker(new URL(URL.createObjectURL(new Blob([code], { type: "text/javascript" }))))],
];
for (const [name, make] of sources) {
  try {
    const worker = make();
    worker.on("error", (error) => console.log(`nested ${name} error: ${error}`));
    worker.unref();
    console.log(`run 1 started a nested worker (${name}) and unref'd it`);
  } catch (error) {
    console.log(`nested ${name}: ${(error as Error).name}: ${(error as Error).message}`);
  }
}
// --- run
await new Promise((resolve) => setTimeout(resolve, 1000));
console.log("run 2 done");
// --- run
await new Promise((resolve) => setTimeout(resolve, 500));
console.log("run 3 done");
