// localStorage and sessionStorage across runs of one host (its DENO_DIR's location_data
// is a file, as the sandbox makes it).
// --- run
for (const [name, storage] of [["local", () => localStorage], ["session", () => sessionStorage]] as const) {
  try {
    storage().setItem("k", "run 1");
    console.log(`${name}Storage set`);
  } catch (error) {
    console.log(`${name}Storage: ${(error as Error).name}: ${(error as Error).message}`);
  }
}
// --- run
for (const [name, storage] of [["local", () => localStorage], ["session", () => sessionStorage]] as const) {
  try {
    console.log(`${name}Storage holds ${storage().getItem("k")}`);
  } catch (error) {
    console.log(`${name}Storage: ${(error as Error).name}: ${(error as Error).message}`);
  }
}
