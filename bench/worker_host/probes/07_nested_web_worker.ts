// options: {"timeout_ms": 1500}
// A web Worker (blob: module) the script starts: Deno never ends an idle web Worker; does
// it keep the run alive, outlive the run (its timeout and terminate()), print later?
// --- run
const code = `setInterval(() => console.log("web nested alive, reads " + Deno.env.get("TOOLSCRIPT_GATEWAY_URL")), 100);`;
try {
  const url = URL.createObjectURL(new Blob([code], { type: "application/javascript" }));
  new Worker(url, { type: "module" });
  console.log("run 1 started a web worker");
} catch (error) {
  console.log(`web worker: ${(error as Error).name}: ${(error as Error).message}`);
}
// --- run
await new Promise((resolve) => setTimeout(resolve, 350));
console.log("run 2 done");
