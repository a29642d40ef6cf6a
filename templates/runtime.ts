// ---- toolscript runtime: the result contract and how a call reaches the gateway ----

/** A JSON value as the gateway returns it. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** An MCP content block (tool results that are not plain text or JSON). */
export type ContentBlock =
  | { type: "text"; text: string; annotations?: JsonObject }
  | { type: "image"; data: string; mimeType: string; annotations?: JsonObject }
  | { type: "audio"; data: string; mimeType: string; annotations?: JsonObject }
  | {
    type: "resource";
    resource: { uri: string; mimeType?: string; text?: string; blob?: string };
    annotations?: JsonObject;
  }
  | {
    type: "resource_link";
    uri: string;
    name: string;
    title?: string;
    description?: string;
    mimeType?: string;
  };

/**
 * What a tool without an outputSchema returns: a JSON object or array when the
 * tool answered with JSON text, the text itself otherwise, a list when it
 * answered with several text blocks, the content blocks for images, audio and
 * resources, or null for no content.
 */
export type ToolResult = string | JsonObject | JsonValue[] | ContentBlock[] | null;

/** Thrown by every tool call that does not succeed. */
export class ToolError extends Error {
  /** The MCP name of the tool, `server__tool`. */
  readonly tool: string;
  /** HTTP status from the gateway (0 when the gateway could not be reached). */
  readonly status: number;
  /** `tool_error`, `invalid_arguments`, `timeout`, `server_unavailable`, `tool_not_found`, ... */
  readonly kind: string;
  /** The tool's content blocks, for `tool_error`. */
  readonly content: ContentBlock[];
  /** Everything the gateway said, for example `errors` of `invalid_arguments`. */
  readonly details: JsonObject;

  /**
   * `named`: the tool as its message names it, as users write it (`time.get_time`, as
   * `toolscript approve --tool` takes it), never the gateway's `time__get_time`.
   */
  constructor(tool: string, message: string, status: number, details: JsonObject = {}, named: string = tool) {
    // A message naming the tool already (`time.get_time`, or `time__get_time`) is not
    // prefixed with its name again.
    // Each line after the first indented: a server's multi-line error ("...\ntoolscript: run
    // `toolscript approve ...`"), printed uncaught on exec's stderr, had a line that read as
    // toolscript's own.
    const said = message.replace(/\r\n|[\r\n\u2028\u2029\u0085]/g, "\n  ");
    super(said.includes(named) || said.includes(tool) ? said : `${named}: ${said}`);
    this.name = "ToolError";
    this.tool = tool;
    this.status = status;
    this.kind = typeof details.error === "string" ? details.error : "error";
    this.content = Array.isArray(details.content) ? (details.content as ContentBlock[]) : [];
    this.details = details;
  }
}

// Served by the gateway, the module finds the tools beside itself; as a file of the
// user's cache (how `toolscript exec` runs it) it is told the gateway's URL. Read at the
// first request, not at the import: a spare sandbox loads this module before its run's URL
// is handed in.
let toolsUrl: URL | undefined;
function toolsURL(): URL {
  toolsUrl ??= import.meta.url.startsWith("file:")
    ? new URL(`${Deno.env.get("TOOLSCRIPT_GATEWAY_URL") ?? "http://127.0.0.1:9/no-gateway"}/tools/`)
    : new URL("../tools/", import.meta.url);
  return toolsUrl;
}

// Errors that stop the whole run (the gateway refuses every further call of it): the script
// ends at once with its exit code, and exec says why and what to do.
const RUN_STOPS: Record<string, number> = {
  approval_required: 120,
  replay_diverged: 121,
  too_many_calls: 122,
};

// A failed call's stack starts at the script's line that made it: an uncaught ToolError
// points there (Deno quotes its first frame), not into this module.
function atTheCall(error: ToolError): ToolError {
  Error.captureStackTrace(error, call);
  return error;
}

// `server.tool`, as users write it, from the gateway's `server__tool` (a server's name holds
// no `__`: the first one ends it).
function named(tool: string): string {
  return tool.replace("__", ".");
}

async function call<T>(tool: string, params: unknown): Promise<T> {
  // One path segment, encoded: a name holding "/", "..", "?" or "#" names only itself.
  const url = new URL(encodeURIComponent(tool), toolsURL());
  try {
    return await answerOf<T>(posted(url, params ?? {}), tool, named(tool));
  } catch (error) {
    throw error instanceof ToolError ? atTheCall(error) : error;
  }
}

// Members a server's tools answer as any object does: `await tools.x` and JSON.stringify
// look for these, and must not find a tool call.
const NOT_TOOLS = new Set(["then", "toJSON"]);

/**
 * The tools of `server` (`members`, `tools.<server>`), which answer a member they lack with
 * a call the gateway refuses by its own error: a tool the policy denies is absent from this
 * module, and a script run without its type check learns that it is denied, and where, not
 * that `tools.<server>.<member>` is not a function.
 */
function unlisted(server: string, members: object): object {
  return new Proxy(members, {
    get(target, key, receiver) {
      if (typeof key !== "string" || key in target || NOT_TOOLS.has(key)) return Reflect.get(target, key, receiver);
      return (params?: unknown) => call(`${server}__${key}`, params);
    },
  });
}

/** A gateway's answer: its status and its body as text. */
type Answer = { status: number; text: string };

const encoder = new TextEncoder();

/** `postedNow`, in its turn (`inTurn`). */
function posted(url: URL, params: unknown): Promise<Answer> {
  return inTurn(() => postedNow(url, params));
}

// Requests a run has under way at once (tool calls, reads, gets, searches): the others wait
// their turn here, in order. A script mapping 100,000 items through Promise.all opened a
// socket for each (Deno panicked: too many open files) and took every place of the
// gateway's, whose other runs' calls and execs were refused meanwhile.
const CALLS_AT_ONCE = 32;
let underWay = 0;
const waiting: (() => void)[] = [];

/** `work` once fewer than `CALLS_AT_ONCE` of this run's requests are under way. */
async function inTurn<T>(work: () => Promise<T>): Promise<T> {
  if (underWay >= CALLS_AT_ONCE) await new Promise<void>((go) => waiting.push(go));
  else underWay++;
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else underWay--;
  }
}

/**
 * A JSON body POSTed to `url` on a connection of its own, spoken by hand (HTTP/1.1, the
 * connection closed after the answer): a script's run is a Deno process of its own, and
 * Deno's fetch costs about 8 ms of CPU at its first request in a process where a socket
 * costs 2 (measured; a tool call is nearly every script's first request). An `https:`
 * gateway is asked with fetch.
 */
async function postedNow(url: URL, params: unknown): Promise<Answer> {
  if (url.protocol !== "http:") return answered(fetch(url, post(params)));
  const payload = encoder.encode(JSON.stringify(params));
  const head = encoder.encode(
    `POST ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n` +
      `content-type: application/json\r\ncontent-length: ${payload.length}\r\n` +
      "connection: close\r\n\r\n",
  );
  const request = new Uint8Array(head.length + payload.length);
  request.set(head);
  request.set(payload, head.length);
  const hostname = url.hostname.replace(/^\[(.*)\]$/, "$1");
  let connection: Deno.TcpConn;
  try {
    connection = await Deno.connect({ hostname, port: Number(url.port || 80) });
  } catch (error) {
    // Deno.connect tries only the first address a name resolves to (`localhost`: ::1 first
    // on macOS, where a gateway started with --host localhost listens on 127.0.0.1); fetch
    // tries each. An address written as such has no other.
    if (/^[\d.]+$/.test(hostname) || hostname.includes(":")) throw error;
    return answered(fetch(url, post(params)));
  }
  try {
    for (let sent = 0; sent < request.length;) sent += await connection.write(request.subarray(sent));
    return await answerRead(connection);
  } finally {
    try {
      connection.close();
    } catch {
      // closed by its end
    }
  }
}

/**
 * An HTTP/1.1 answer read from `connection` up to its end: status and body. The head is
 * read into one array grown by doubling (each byte copied a bounded number of times,
 * however small the reads). A body of a known length is read straight into its own array
 * (a large result is held once, then as its text, as fetch held it); a chunked one, or one
 * of no length, is joined once read.
 */
async function answerRead(connection: Deno.Conn): Promise<Answer> {
  let data = new Uint8Array(16 * 1024);
  let size = 0;
  let end = -1;
  while (end < 0) {
    if (size === data.length) {
      const grown = new Uint8Array(data.length * 2);
      grown.set(data);
      data = grown;
    }
    const read = await connection.read(data.subarray(size));
    if (read === null) throw new Error("the gateway's answer ended before its headers did");
    const from = Math.max(0, size - 3);
    size += read;
    end = headEnd(data.subarray(0, size), from);
  }
  const lines = new TextDecoder().decode(data.subarray(0, end)).split("\r\n");
  const status = Number(lines[0].split(" ")[1]);
  if (!Number.isInteger(status)) throw new Error(`the gateway's answer is not HTTP: ${lines[0].slice(0, 80)}`);
  const headers = (name: string) =>
    lines.slice(1).filter((line) => line.toLowerCase().startsWith(`${name}:`)).map((line) =>
      line.slice(name.length + 1).trim()
    );
  const first = data.subarray(end + 4, size);
  // Its length: digits, the same in each `content-length` (a list of one value repeated is
  // one length, as HTTP/1.1 has it); any other is no length to read a body by.
  const lengths = headers("content-length").flatMap((value) => value.split(",").map((one) => one.trim()));
  let body: Uint8Array;
  if (headers("transfer-encoding")[0]?.toLowerCase() === "chunked") {
    body = unchunked(await toTheEnd(connection, first));
  } else if (lengths.length === 0) {
    body = await toTheEnd(connection, first);
  } else {
    const length = Number(lengths[0]);
    if (!lengths.every((one) => /^\d+$/.test(one) && one === lengths[0]) || !Number.isSafeInteger(length)) {
      throw new Error(`the gateway's answer has a bad length: ${lengths.join(", ").slice(0, 80)}`);
    }
    body = new Uint8Array(length);
    body.set(first.subarray(0, length));
    for (let at = Math.min(first.length, length); at < length;) {
      const read = await connection.read(body.subarray(at));
      if (read === null) throw new Error("the gateway's answer ended early");
      at += read;
    }
  }
  return { status, text: new TextDecoder().decode(body) };
}

/** Where the head of `data` ends (its blank line), looked for from `from`; -1 before it came. */
function headEnd(data: Uint8Array, from: number): number {
  for (let i = from; i + 3 < data.length; i++) {
    if (data[i] === 13 && data[i + 1] === 10 && data[i + 2] === 13 && data[i + 3] === 10) return i;
  }
  return -1;
}

/** `first`, then what is left to read on `connection` up to its end, as one array. */
async function toTheEnd(connection: Deno.Conn, first: Uint8Array): Promise<Uint8Array> {
  const buffer = new Uint8Array(64 * 1024);
  const parts = [first];
  for (let read = await connection.read(buffer); read !== null; read = await connection.read(buffer)) {
    parts.push(buffer.slice(0, read));
  }
  return joined(parts);
}

/**
 * A chunked body's chunks joined. It ends at its last (empty) chunk: a connection closed
 * before that, between chunks or inside one, ended the answer early (never a shorter body).
 */
function unchunked(body: Uint8Array): Uint8Array {
  const chunks: Uint8Array[] = [];
  let at = 0;
  for (;;) {
    let line = at;
    while (line + 1 < body.length && !(body[line] === 13 && body[line + 1] === 10)) line++;
    const size = parseInt(new TextDecoder().decode(body.subarray(at, line)), 16);
    if (!Number.isFinite(size) || size < 0 || line + 1 >= body.length) {
      throw new Error("the gateway's answer ended early");
    }
    if (size === 0) break;
    if (line + 2 + size > body.length) throw new Error("the gateway's answer ended early");
    chunks.push(body.subarray(line + 2, line + 2 + size));
    at = line + 2 + size + 2;
  }
  return joined(chunks);
}

/** `parts` as one array, in order. */
function joined(parts: Uint8Array[]): Uint8Array {
  const whole = new Uint8Array(parts.reduce((size, part) => size + part.length, 0));
  let at = 0;
  for (const part of parts) {
    whole.set(part, at);
    at += part.length;
  }
  return whole;
}

async function answered(request: Promise<Response>): Promise<Answer> {
  const response = await request;
  return { status: response.status, text: await response.text() };
}

/**
 * The gateway's answer to a request about `what` (a tool's name, or what a script asked
 * of the gateway; `named`, how a message names it): its JSON body (or text); a ToolError
 * when the gateway could not be reached (status 0) or answered with an error status; an
 * error that stops the whole run ends the script at once with its exit code.
 */
async function answerOf<T>(request: Promise<Answer>, what: string, named: string = what): Promise<T> {
  let response: Answer;
  try {
    response = await request;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ToolError(what, `the gateway could not be reached: ${reason}`, 0, { error: "transport" }, named);
  }
  const text = response.text;
  let body: JsonValue;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  if (response.status < 200 || response.status > 299) {
    const details: JsonObject = body !== null && typeof body === "object" && !Array.isArray(body)
      ? body
      : { message: String(body) };
    const message = typeof details.message === "string" ? details.message : `HTTP ${response.status}`;
    const stop = typeof details.error === "string" ? RUN_STOPS[details.error] : undefined;
    if (stop !== undefined) Deno.exit(stop);
    throw new ToolError(what, message, response.status, details, named);
  }
  return body as T;
}

function post(body: unknown): RequestInit {
  return { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
}

/**
 * Say how far the script is: `progress("fetched 40 of 120 issues", 0.33)`. Shown on
 * exec's stderr (and `runs wait`'s), and sent as MCP progress through the MCP face.
 * `fraction` runs from 0 to 1. Never throws: progress is news, not work.
 */
export async function progress(message: string, fraction?: number): Promise<void> {
  try {
    const response = await fetch(new URL("../progress", toolsURL()), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ message: String(message), fraction: Number.isFinite(fraction) ? fraction : null }),
    });
    await response.body?.cancel();
  } catch {
    // the gateway could not be reached: the next tool call will say so
  }
}

// ---- what servers offer besides tools, and finding tools at run time ----

/** A resource a server lists (`resources.<server>.list()`). */
export interface ResourceInfo {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  size?: number;
}

/** A resource template: read it with a URI made from `uriTemplate` and its `parameters`. */
export interface ResourceTemplateInfo {
  uriTemplate: string;
  name: string;
  /** The template's variables, e.g. ["id"] for `test://resource/{id}`. */
  parameters: string[];
  title?: string;
  description?: string;
  mimeType?: string;
}

/** What `resources.<server>.read(uri)` answers: text, or bytes, with the mime type. */
export type ResourceContent =
  | { uri: string; mimeType?: string; text: string }
  | { uri: string; mimeType?: string; bytes: Uint8Array };

/** A prompt a server lists, with the arguments `prompts.<server>.get` takes. */
export interface PromptInfo {
  name: string;
  title?: string;
  description?: string;
  arguments?: { name: string; description?: string; required?: boolean }[];
}

/** One message of a prompt. */
export interface PromptMessage {
  role: "user" | "assistant";
  content: ContentBlock;
}

/** What `prompts.<server>.get` answers. */
export interface PromptResult {
  description?: string;
  messages: PromptMessage[];
}

/**
 * A server's resources. A server whose templates toolscript listed has its own interface:
 * `template` then takes one of its URI templates (or a template's name) and exactly its
 * variables.
 */
export interface ServerResources {
  list(): Promise<{ resources: ResourceInfo[]; templates: ResourceTemplateInfo[] }>;
  read(uri: string): Promise<ResourceContent[]>;
  /** Read the resource a URI template gives with `params` (RFC 6570, values percent-encoded). */
  template(template: string, params?: Record<string, string>): Promise<ResourceContent[]>;
}

/**
 * A server's prompts. A server whose prompts toolscript listed has its own interface: `get`
 * then takes one of its prompts' names and that prompt's arguments.
 */
export interface ServerPrompts {
  list(): Promise<PromptInfo[]>;
  get(name: string, args?: Record<string, string>): Promise<PromptResult>;
}

/** A hit of `search`: what it is and how a script calls or reads it. */
export interface SearchHit {
  kind: "tool" | "resource" | "prompt" | "script";
  server: string;
  /** The tool's MCP name (a resource's URI or template, a prompt's name). */
  tool: string;
  /** How a script calls it, e.g. `tools.github.createIssue`. */
  call: string | null;
  description: string;
  score: number;
  /** Set when no tool is close to the request in meaning: this is only the nearest one. */
  weak?: true;
}

/** What `describe` answers about one tool. */
export interface ToolDescription {
  server: string;
  tool: string;
  call: string;
  description: string;
  inputSchema: JsonObject;
  outputSchema: JsonObject | null;
  /** allow, ask or deny: what the policy does with its calls. */
  policy: string;
  /** Its parameters and result as TypeScript declarations. */
  typescript: string;
  example: string;
}

function ask<T>(what: string, path: string, init?: RequestInit, named: string = what): Promise<T> {
  const url = new URL(path, new URL("../", toolsURL()));
  return answerOf(inTurn(() => answered(fetch(url, init))), what, named);
}

function serverPath(server: string, rest: string): string {
  return `servers/${encodeURIComponent(server)}/${rest}`;
}

function bytesOf(base64: string): Uint8Array {
  const raw = atob(base64);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

function serverResources(server: string): ServerResources {
  const read = async (what: string, body: unknown): Promise<ResourceContent[]> => {
    const answer = await ask<{ contents: JsonObject[] }>(`${server}: ${what}`, serverPath(server, "resources/read"), post(body));
    return answer.contents.map((item) => {
      const base = { uri: String(item.uri), ...(typeof item.mimeType === "string" ? { mimeType: item.mimeType } : {}) };
      return typeof item.blob === "string" ? { ...base, bytes: bytesOf(item.blob) } : { ...base, text: String(item.text ?? "") };
    });
  };
  return {
    list: () => ask(`${server}: resources`, serverPath(server, "resources")),
    read: (uri) => read(uri, { uri }),
    // The gateway finds the template, checks the parameters and expands it.
    template: (template, params) => read(template, { template, params: params ?? {} }),
  };
}

function serverPrompts(server: string): ServerPrompts {
  return {
    list: async () => (await ask<{ prompts: PromptInfo[] }>(`${server}: prompts`, serverPath(server, "prompts"))).prompts,
    get: (name, args) => ask(`${server}: prompt ${name}`, serverPath(server, "prompts/get"), post({ name, arguments: args ?? {} })),
  };
}

/**
 * Tools (or, with `kind`, resources and prompts) for a need, best first, ranked by the
 * gateway's search; each hit says how to call it.
 */
export async function search(
  query: string,
  options: { limit?: number; server?: string; kind?: "tool" | "resource" | "prompt" | "all" } = {},
): Promise<SearchHit[]> {
  const params = new URLSearchParams({ q: query, limit: String(options.limit ?? 10) });
  if (options.server) params.set("server", options.server);
  if (options.kind) params.set("kind", options.kind);
  const found = await ask<{ hits: SearchHit[] }>("search", `runtime/search?${params}`);
  return found.hits.map((hit) => ({ ...hit, kind: hit.kind ?? "tool" }));
}

/** One tool's parameters and result, as JSON Schema and as TypeScript, and how to call it. */
export function describe(server: string, tool: string): Promise<ToolDescription> {
  const path = `runtime/describe?${new URLSearchParams({ server, tool })}`;
  return ask(`${server}__${tool}`, path, undefined, `${server}.${tool}`);
}

// ---- generated from the servers' tool schemas ----
