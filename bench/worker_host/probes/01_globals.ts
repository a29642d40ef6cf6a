// Does a run's global state reach the next run's worker? (a worker has its own isolate)
// --- run
import { tools } from "toolscript";
(globalThis as any).leak = "run 1";
(Array.prototype as any).leak = "run 1's prototype";
(tools.time as any).getCurrentTime = () => "hijacked by run 1";
console.log("run 1 set a global, a prototype, the module's tool");
// --- run
import { tools } from "toolscript";
console.log(
  `global: ${(globalThis as any).leak}; prototype: ${([] as any).leak}; ` +
    `tool: ${String(tools.time.getCurrentTime).includes("hijacked") ? "hijacked" : "its own"}`,
);
