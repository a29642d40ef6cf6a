// Exit codes and a run's end: Deno.exit, Deno.exitCode, an uncaught error, an unhandled
// rejection, process.exit, a fetch and a timer left running after the top level.
// --- run
Deno.exit(121);
// --- run
Deno.exitCode = 3;
// --- run
throw new Error("boom");
// --- run
Promise.reject(new Error("unhandled"));
// --- run
import process from "node:process";
process.exit(7);
// --- run
fetch(new URL("/livez", Deno.env.get("TOOLSCRIPT_GATEWAY_URL"))).then((r) => r.text()).then((t) => console.log(`late fetch answered ${t}`));
console.log("top level ended");
// --- run
setTimeout(() => console.log("timer 300 ms fired"), 300);
// --- run
console.log("the host still runs scripts");
