const r: Record<string, unknown> = {};
async function t(name: string, f: () => unknown) { try { r[name] = await f(); } catch (e) { r[name] = "ERR " + String(e).slice(0, 200); } }
const gw = Deno.env.get("TOOLSCRIPT_GATEWAY_URL")!;
await t("proxy_other_target_gw", async () => { const c = (Deno as any).createHttpClient({ proxy: { url: "http://127.0.0.1:47111" } }); return await (await fetch(gw + "/runtime/hash", { client: c } as any)).text(); });
await t("proxy_gw_target_other", async () => { const c = (Deno as any).createHttpClient({ proxy: { url: "http://127.0.0.1:" } }); return await (await fetch("http://127.0.0.1:47111/", { client: c } as any)).text(); });
await t("proxy_unix", async () => { const c = (Deno as any).createHttpClient({ proxy: { transport: "unix", path: "/tmp/atk/x.sock" } }); return await (await fetch(gw + "/runtime/hash", { client: c } as any)).text(); });
await t("listen", () => { const l = Deno.listen({ hostname: "127.0.0.1", port: 0 }); return "LISTEN " + JSON.stringify(l.addr); });
await t("listen_gwport", () => { const l = Deno.listen({ hostname: "127.0.0.1", port:  }); return "LISTEN"; });
await t("connectTls", async () => { await Deno.connectTls({ hostname: "127.0.0.1", port: 47111 }); return "TLS"; });
await t("eventsource", () => new Promise((res) => { const e = new EventSource("http://127.0.0.1:47111/"); e.onerror = (x) => { res("err"); e.close(); }; e.onopen = () => res("OPEN"); }));
await t("fetch_host_header", async () => (await fetch(gw + "/runtime/hash", { headers: { Host: "127.0.0.1:47111" } })).status);
await t("fetch_gw_userinfo", async () => (await fetch("http://u:p@127.0.0.1:/livez")).status);
await t("fetch_gw_octal", async () => (await fetch("http://0177.0.0.1:/livez")).status);
await t("fetch_gw_decimal", async () => (await fetch("http://2130706433:/livez")).status);
await t("fetch_other_decimal", async () => (await (await fetch("http://2130706433:47111/")).text()));
await t("fetch_gw_trailing_dot", async () => (await fetch("http://127.0.0.1.:/livez")).status);
console.log(JSON.stringify(r, null, 1));
