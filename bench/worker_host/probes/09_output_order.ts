// Output: is all of a run's stdout out before the host's marker (lines, a big write not
// awaited, a line from a late timer)?
// --- run
for (let i = 0; i < 2000; i++) console.log(`line ${i}`);
console.log("x".repeat(1 << 20));
Deno.stdout.write(new TextEncoder().encode("y".repeat(1 << 20) + "\n")); // not awaited
setTimeout(() => console.log("LAST LINE from a timer"), 20);
// --- run
console.log("run 2");
