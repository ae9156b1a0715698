/**
 * Plans through the payment provider: a Checkout Session created through the adapter (read back
 * with the official `stripe` package from the emulator, which proves the wire format), signed
 * webhook events that change the plan (signed by the official package's test helper, which proves
 * the verification follows Stripe's scheme), a bad signature, an old timestamp and a redelivered
 * event refused or ignored.
 */
import Stripe from 'stripe';
import { startEmulator, type EmulatorHandle } from '../../../emulator/server';
import { createTestProject, http as httpClient, startTestTollgate } from '../../support/tollgate';
import { emulatorEnv } from '../executions/helpers';
import { signIn, userWithRoles } from './support';

const SECRET_KEY = 'sk_test_tollgate123';
const WEBHOOK_SECRET = 'whsec_tollgate_test_secret';

describe('billing through the payment provider', () => {
  let emu: EmulatorHandle;
  let tg: Awaited<ReturnType<typeof startTestTollgate>>;
  let call: ReturnType<typeof httpClient>;
  let stripe: Stripe;
  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
    tg = await startTestTollgate({
      env: {
        ...emulatorEnv(emu.url),
        STRIPE_API_BASE: emu.url,
        STRIPE_SECRET_KEY: SECRET_KEY,
        STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
        STRIPE_PRICE_PRODUCTION: 'price_production_monthly',
        STRIPE_PRICE_ENTERPRISE: 'price_enterprise_monthly',
      },
    });
    call = httpClient(tg.url!);
    const u = new URL(emu.url);
    stripe = new Stripe(SECRET_KEY, { host: u.hostname, port: Number(u.port), protocol: 'http' });
  });
  afterAll(async () => {
    await tg.close();
    await emu.close();
  });

  const planOf = async (projectId: string) => (await tg.db.query('SELECT plan FROM projects WHERE id = $1', [projectId])).rows[0].plan as string;
  const deliver = (payload: string, signature: string) =>
    call('POST', '/v1/billing/stripe/webhook', { rawBody: payload, headers: { 'content-type': 'application/json', 'stripe-signature': signature } });
  const event = (type: string, object: Record<string, unknown>) => JSON.stringify({ id: `evt_${Math.random().toString(36).slice(2)}`, object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object } });

  it('checkout by the owner, then the signed completion event sets the plan once', async () => {
    const p = await createTestProject(tg.db, 'starter');
    const owner = await userWithRoles(tg.db, [{ projectId: p.project.id, role: 'owner' }]);
    const { access_token: token } = await signIn(call, owner.email);

    const res = await call('POST', '/v1/billing/checkout', { key: token, body: { project_id: p.project.id, plan: 'production' } });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ object: 'billing_checkout', project_id: p.project.id, plan: 'production', checkout_session_id: expect.stringMatching(/^cs_test_/), url: expect.stringContaining('/pay/') });
    // The official client reads the session Tollgate created: same wire format.
    const session = await stripe.checkout.sessions.retrieve(res.json.checkout_session_id);
    expect(session).toMatchObject({ mode: 'subscription', client_reference_id: p.project.id, metadata: { project_id: p.project.id, plan: 'production' } });

    const payload = event('checkout.session.completed', { ...session, status: 'complete' });
    const signature = stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
    const applied = await deliver(payload, signature);
    expect(applied.status).toBe(200);
    expect(applied.json).toMatchObject({ received: true, duplicate: false, applied: true, project_id: p.project.id, plan: 'production' });
    expect(await planOf(p.project.id)).toBe('production');

    // A redelivery of the same event is acknowledged and not applied again.
    await tg.db.query("UPDATE projects SET plan = 'enterprise' WHERE id = $1", [p.project.id]);
    const again = await deliver(payload, stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET }));
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({ duplicate: true, applied: false });
    expect(await planOf(p.project.id)).toBe('enterprise');

    // The subscription ends: back to starter.
    const ended = event('customer.subscription.deleted', { id: 'sub_x', object: 'subscription', status: 'canceled', metadata: { project_id: p.project.id } });
    expect((await deliver(ended, stripe.webhooks.generateTestHeaderString({ payload: ended, secret: WEBHOOK_SECRET }))).json).toMatchObject({ applied: true, plan: 'starter' });
    expect(await planOf(p.project.id)).toBe('starter');

    // A subscription update moves to the plan of its price.
    const updated = event('customer.subscription.updated', { id: 'sub_x', object: 'subscription', status: 'active', metadata: { project_id: p.project.id }, items: { data: [{ price: { id: 'price_enterprise_monthly' } }] } });
    expect((await deliver(updated, stripe.webhooks.generateTestHeaderString({ payload: updated, secret: WEBHOOK_SECRET }))).json).toMatchObject({ applied: true, plan: 'enterprise' });
    expect(await planOf(p.project.id)).toBe('enterprise');
  });

  it('refuses a bad signature, a signature older than the tolerance and an unsigned event; nothing changes', async () => {
    const p = await createTestProject(tg.db, 'starter');
    const payload = event('checkout.session.completed', { id: 'cs_x', object: 'checkout.session', client_reference_id: p.project.id, metadata: { project_id: p.project.id, plan: 'enterprise' } });
    const wrong = await deliver(payload, stripe.webhooks.generateTestHeaderString({ payload, secret: 'whsec_someone_else' }));
    expect(wrong.status).toBe(400);
    expect(wrong.json.error).toMatchObject({ code: 'invalid_signature', details: { reason: 'mismatch' } });
    const old = await deliver(payload, stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET, timestamp: Math.floor(Date.now() / 1000) - 3600 }));
    expect(old.status).toBe(400);
    expect(old.json.error.details.reason).toBe('too_old');
    const unsigned = await call('POST', '/v1/billing/stripe/webhook', { rawBody: payload, headers: { 'content-type': 'application/json' } });
    expect(unsigned.status).toBe(400);
    expect(unsigned.json.error.details.reason).toBe('missing');
    // A body changed after signing does not verify.
    const signature = stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
    expect((await deliver(payload.replace('enterprise', 'production'), signature)).status).toBe(400);
    expect(await planOf(p.project.id)).toBe('starter');
    expect((await call('POST', '/v1/billing/paypal/webhook', { rawBody: payload, headers: { 'content-type': 'application/json' } })).status).toBe(404);
  });

  it('checkout needs the owner role in that project', async () => {
    const p = await createTestProject(tg.db, 'starter');
    const other = await createTestProject(tg.db, 'starter');
    const viewer = await userWithRoles(tg.db, [{ projectId: p.project.id, role: 'viewer' }, { projectId: other.project.id, role: 'owner' }]);
    const { access_token: token } = await signIn(call, viewer.email);
    const asViewer = await call('POST', '/v1/billing/checkout', { key: token, body: { project_id: p.project.id, plan: 'production' } });
    expect(asViewer.status).toBe(403);
    expect(asViewer.json.error.code).toBe('insufficient_role');
    const stranger = await userWithRoles(tg.db, [{ projectId: other.project.id, role: 'owner' }]);
    const { access_token: strangerToken } = await signIn(call, stranger.email);
    expect((await call('POST', '/v1/billing/checkout', { key: strangerToken, body: { project_id: p.project.id, plan: 'production' } })).status).toBe(404);
    expect((await call('POST', '/v1/billing/checkout', { key: token, body: { project_id: other.project.id, plan: 'starter' } })).status).toBe(409);
    expect((await call('POST', '/v1/billing/checkout', { key: token, body: { project_id: other.project.id, plan: 'gold' } })).status).toBe(400);
  });
});
