// The Cache API across runs of one host.
// --- run
try {
  const cache = await caches.open("x");
  await cache.put("http://127.0.0.1/x", new Response("run 1"));
  console.log("cache put");
} catch (error) {
  console.log(`caches: ${(error as Error).name}: ${(error as Error).message}`);
}
// --- run
try {
  const cache = await caches.open("x");
  const hit = await cache.match("http://127.0.0.1/x");
  console.log(`cache holds ${hit ? await hit.text() : "nothing"}`);
} catch (error) {
  console.log(`caches: ${(error as Error).name}: ${(error as Error).message}`);
}
