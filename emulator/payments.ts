/**
 * The payment provider's emulator (Stripe's wire format, the parts Tollgate uses): Checkout
 * Sessions created and read at `/v1/checkout/sessions` with a secret key, form-encoded bodies as
 * Stripe takes them, and signed webhook events (`Stripe-Signature: t=…,v1=…`, HMAC-SHA256 of
 * `${t}.${payload}`) for tests to deliver. The official `stripe` package talks to it in the tests.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

interface CheckoutSession {
  id: string;
  object: 'checkout.session';
  mode: string;
  status: 'open' | 'complete';
  url: string;
  client_reference_id: string | null;
  metadata: Record<string, string>;
  line_items: { price: string; quantity: number }[];
  success_url: string | null;
  cancel_url: string | null;
  customer: string;
  subscription: string;
  created: number;
}

const sessions = new Map<string, CheckoutSession>();
const id = (prefix: string) => `${prefix}_${randomBytes(12).toString('hex')}`;

/** `a[b][0][c]=v` form fields → nested objects and arrays, as Stripe decodes them. */
function decodeForm(body: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of new URLSearchParams(body)) {
    const path = k.replace(/\]/g, '').split('[');
    let cur: Record<string, unknown> = out;
    path.forEach((seg, i) => {
      if (i === path.length - 1) cur[seg] = v;
      else cur = (cur[seg] ??= /^\d+$/.test(path[i + 1]) ? [] : {}) as Record<string, unknown>;
    });
  }
  return out;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const data = Buffer.from(JSON.stringify(body));
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': data.length, 'request-id': id('req') });
  res.end(data);
}

const stripeError = (res: ServerResponse, status: number, type: string, message: string) => send(res, status, { error: { type, message } });

/** Handles `/v1/checkout/sessions…`; false when the path is not the payment emulator's. */
export async function handlePayments(req: IncomingMessage, res: ServerResponse, url: URL, baseUrl: string): Promise<boolean> {
  if (!url.pathname.startsWith('/v1/checkout/sessions')) return false;
  if (!/^Bearer sk_(test|live)_\w+/.test(String(req.headers.authorization ?? ''))) {
    stripeError(res, 401, 'invalid_request_error', 'Invalid API Key provided');
    return true;
  }
  if (req.method === 'POST' && url.pathname === '/v1/checkout/sessions') {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const f = decodeForm(Buffer.concat(chunks).toString('utf8')) as {
      mode?: string; client_reference_id?: string; success_url?: string; cancel_url?: string;
      metadata?: Record<string, string>; line_items?: { price?: string; quantity?: string }[];
    };
    if (!f.mode || !Array.isArray(f.line_items) || f.line_items.length === 0 || !f.line_items[0].price) {
      stripeError(res, 400, 'invalid_request_error', 'Missing required param: line_items[0][price] or mode.');
      return true;
    }
    const s: CheckoutSession = {
      id: id('cs_test'),
      object: 'checkout.session',
      mode: f.mode,
      status: 'open',
      url: '',
      client_reference_id: f.client_reference_id ?? null,
      metadata: f.metadata ?? {},
      line_items: f.line_items.map((l) => ({ price: String(l.price), quantity: Number(l.quantity ?? 1) })),
      success_url: f.success_url ?? null,
      cancel_url: f.cancel_url ?? null,
      customer: id('cus'),
      subscription: id('sub'),
      created: Math.floor(Date.now() / 1000),
    };
    s.url = `${baseUrl}/pay/${s.id}`;
    sessions.set(s.id, s);
    send(res, 200, s);
    return true;
  }
  const m = /^\/v1\/checkout\/sessions\/([\w-]+)$/.exec(url.pathname);
  if (req.method === 'GET' && m) {
    const s = sessions.get(m[1]);
    if (!s) stripeError(res, 404, 'invalid_request_error', `No such checkout.session: '${m[1]}'`);
    else send(res, 200, s);
    return true;
  }
  stripeError(res, 404, 'invalid_request_error', `Unrecognized request URL (${req.method}: ${url.pathname})`);
  return true;
}

