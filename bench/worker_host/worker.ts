// A run's worker (bench/worker_host.py): spawned ahead by host.ts, it loads the module and
// warms a fetch to the gateway, then waits for its one script (the run's URL and the
// script's URL by message) and imports it. Nothing of the script's runs before it.
import { parentPort, workerData } from "node:worker_threads";

(async () => {
  try {
    await import("toolscript");
  } catch {
    // only a warm-up
  }
  try {
    await (await fetch(workerData.liveness)).arrayBuffer();
  } catch {
    // only a warm-up
  }
})();

parentPort!.once("message", async (message: { url: string; script: string }) => {
  // once: the listener is gone, the port no longer keeps the worker alive
  Deno.env.set("TOOLSCRIPT_GATEWAY_URL", message.url);
  await import(message.script);
});
