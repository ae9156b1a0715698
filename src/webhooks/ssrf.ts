/**
 * SSRF guard of webhook targets. A URL whose host resolves to a loopback, private, shared (CGNAT),
 * link-local (cloud metadata: 169.254.169.254), unique-local, multicast or reserved address is
 * refused, at subscription time and again at each delivery: the delivery connects to the address
 * this guard checked (its `lookup`), so a DNS answer that changes between the check and the
 * connection (rebinding) cannot reach an internal address. An operator allow-list
 * (WEBHOOK_ALLOWED_HOSTS: host names, IP addresses, CIDR ranges) admits chosen internal targets
 * (tests and `npm run dev` allow 127.0.0.1 and localhost). Managed MCP calls use the same guard
 * and the same pinning (`guardedFetch`).
 */
import dns from 'node:dns';
import net from 'node:net';
import { Agent, fetch as undiciFetch } from 'undici';

const forbidden = new net.BlockList();
for (const [addr, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) forbidden.addSubnet(addr, prefix, 'ipv4');
for (const [addr, prefix] of [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['2001:db8::', 32], ['100::', 64],
] as const) forbidden.addSubnet(addr, prefix, 'ipv6');

/** The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d) or NAT64 (64:ff9b::a.b.c.d) IPv6 address. */
function embeddedIpv4(ip: string): string | null {
  const m = /^(?:::ffff:|64:ff9b::)(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (m) return m[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(ip);
  if (hex) {
    const a = parseInt(hex[1], 16);
    const b = parseInt(hex[2], 16);
    return `${a >> 8}.${a & 255}.${b >> 8}.${b & 255}`;
  }
  return null;
}

/** True for addresses a webhook may not reach unless allow-listed. */
export function isInternalAddress(ip: string): boolean {
  const family = net.isIP(ip);
  if (family === 4) return forbidden.check(ip, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(ip);
    if (v4) return forbidden.check(v4, 'ipv4');
    return forbidden.check(ip, 'ipv6');
  }
  return true; // not an address at all: refuse
}

export interface AllowList {
  hostAllowed(hostname: string): boolean;
  addressAllowed(ip: string): boolean;
}

/** Parses WEBHOOK_ALLOWED_HOSTS entries: host names, IP addresses, CIDR ranges. */
export function allowList(entries: string[]): AllowList {
  const hosts = new Set<string>();
  const nets = new net.BlockList();
  for (const raw of entries) {
    const e = raw.trim().toLowerCase().replace(/^\[|\]$/g, '');
    if (!e) continue;
    const [addr, bits] = e.split('/');
    const family = net.isIP(addr);
    if (family && bits !== undefined) nets.addSubnet(addr, Number(bits), family === 4 ? 'ipv4' : 'ipv6');
    else if (family) nets.addAddress(addr, family === 4 ? 'ipv4' : 'ipv6');
    else hosts.add(e);
  }
  return {
    hostAllowed: (hostname) => hosts.has(hostname.toLowerCase().replace(/^\[|\]$/g, '')),
    addressAllowed: (ip) => {
      const family = net.isIP(ip);
      if (!family) return false;
      const v4 = family === 6 ? embeddedIpv4(ip) : null;
      return v4 ? nets.check(v4, 'ipv4') : nets.check(ip, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}

export class SsrfRefusedError extends Error {
  constructor(readonly host: string, readonly address: string | null, message: string) {
    super(message);
    this.name = 'SsrfRefusedError';
  }
}

export type Resolver = (hostname: string) => Promise<{ address: string; family: number }[]>;

export const systemResolver: Resolver = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true });

/**
 * Resolves `hostname` and checks every address. Returns the addresses (all allowed), or throws
 * SsrfRefusedError. An allow-listed host name admits whatever it resolves to.
 */
export async function checkedAddresses(hostname: string, allow: AllowList, resolve: Resolver = systemResolver): Promise<{ address: string; family: number }[]> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const literal = net.isIP(host);
  const addrs = literal ? [{ address: host, family: literal }] : await resolve(host).catch((err: Error) => {
    throw new SsrfRefusedError(host, null, `${host} does not resolve (${err.message})`);
  });
  if (addrs.length === 0) throw new SsrfRefusedError(host, null, `${host} does not resolve`);
  if (allow.hostAllowed(host)) return addrs;
  for (const a of addrs) {
    if (isInternalAddress(a.address) && !allow.addressAllowed(a.address)) {
      throw new SsrfRefusedError(host, a.address, `${host} resolves to ${a.address}, a loopback, private, link-local or reserved address`);
    }
  }
  return addrs;
}

/**
 * A `lookup` for node:http(s) that connects only to addresses `checkedAddresses` admitted: the
 * check and the connection use the same DNS answer.
 */
export function guardedLookup(allow: AllowList, resolve: Resolver = systemResolver): net.LookupFunction {
  return ((hostname: string, options: dns.LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void) => {
    checkedAddresses(hostname, allow, resolve).then(
      (addrs) => {
        if (options?.all) callback(null, addrs);
        else callback(null, addrs[0].address, addrs[0].family);
      },
      (err: Error) => callback(Object.assign(err, { code: 'ESSRF' }) as NodeJS.ErrnoException, ''),
    );
  });
}

/**
 * A fetch whose connections use `guardedLookup` (for clients that take a fetch: the MCP SDK's
 * transport), on its own connection pool; `close` ends the pool's connections.
 */
export function guardedFetch(allow: AllowList, resolve: Resolver = systemResolver): { fetch: typeof fetch; close(): Promise<void> } {
  const agent = new Agent({ connect: { lookup: guardedLookup(allow, resolve) } });
  const pinned = ((input: string | URL, init?: RequestInit) =>
    undiciFetch(input, { ...(init as Parameters<typeof undiciFetch>[1]), dispatcher: agent })) as unknown as typeof fetch;
  return { fetch: pinned, close: () => agent.destroy() };
}
