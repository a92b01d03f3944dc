// A thin fetch wrapper speaking API.md: JSON in, JSON out, problem+json errors
// turned into ApiError with the contract's `code`.

export class ApiError extends Error {
  constructor(status, problem, retryAfterS) {
    super(problem?.detail || problem?.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem || {};
    this.code = problem?.code || (status === 0 ? 'network' : status >= 500 ? 'server_error' : 'bad_request');
    this.retryAfterS = retryAfterS;
  }
}

/** Random key for Idempotency-Key headers (crypto.randomUUID needs a secure context). */
export function newKey() {
  if (globalThis.crypto?.randomUUID && globalThis.isSecureContext) return crypto.randomUUID();
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * request('POST', '/api/…', {token, body, idempotencyKey, headers, etag})
 * → {status, body, headers}. 304 returns {status: 304, body: null}.
 */
export async function request(method, path, opts = {}) {
  const headers = { Accept: 'application/json', ...(opts.headers || {}) };
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  if (opts.idempotencyKey) headers['Idempotency-Key'] = opts.idempotencyKey;
  if (opts.etag) headers['If-None-Match'] = opts.etag;
  let payload;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(path, { method, headers, body: payload, cache: 'no-store' });
  } catch {
    throw new ApiError(0, { code: 'network' });
  }
  const retryAfter = Number(res.headers.get('Retry-After')) || undefined;
  if (res.status === 304) return { status: 304, body: null, headers: res.headers };
  let body = null;
  const text = await res.text();
  if (text) {
    try {
      body = JSON.parse(text);
    } catch {
      body = null;
    }
  }
  if (!res.ok) throw new ApiError(res.status, body, retryAfter);
  return { status: res.status, body, headers: res.headers };
}

/**
 * Retries a request while the server says it is busy (503/429 with Retry-After) or
 * unreachable, re-sending the same Idempotency-Key so a retried click is one action.
 */
export async function requestPatiently(method, path, opts = {}, onWait = () => {}) {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await request(method, path, opts);
    } catch (err) {
      const retryable = err.status === 0 || err.status === 429 || err.status === 503 || err.status === 502 || err.status === 504;
      if (!retryable || attempt >= 5) throw err;
      const waitS = err.retryAfterS ?? Math.min(8, 2 ** attempt);
      onWait(err, waitS);
      await sleep(waitS * 1000 * (0.8 + Math.random() * 0.4));
    }
  }
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
