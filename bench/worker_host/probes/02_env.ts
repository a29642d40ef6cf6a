// The environment is the process's: what a run sets, the next sees (its own URL is set
// by its worker before its import, so it reads its own).
// --- run
console.log(`run 1 reads ${Deno.env.get("TOOLSCRIPT_GATEWAY_URL")}`);
Deno.env.set("TOOLSCRIPT_GATEWAY_URL", "http://run-1-was-here/");
try {
  Deno.env.set("OTHER", "x");
} catch (error) {
  console.log(`another variable: ${(error as Error).name}`);
}
// --- run
console.log(`run 2 reads ${Deno.env.get("TOOLSCRIPT_GATEWAY_URL")}`);
