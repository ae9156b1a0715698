/**
 * CPU time of processes, from /proc (Linux), to report CPU per request: a process's own user +
 * system time, and for PostgreSQL every `postgres` process plus what the postmaster collected
 * from backends that already exited (cutime + cstime).
 */
import fs from 'node:fs';

const TICK_MS = 10; // USER_HZ is 100 on Linux

function stat(pid: number): string[] | null {
  try {
    const s = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // comm may hold spaces: fields after the closing parenthesis start at state (field 3).
    const close = s.lastIndexOf(')');
    return [s.slice(0, s.indexOf('(')).trim(), s.slice(s.indexOf('(') + 1, close), ...s.slice(close + 2).split(' ')];
  } catch {
    return null;
  }
}

/** User + system CPU ms of one live process. */
export function processCpuMs(pid: number): number {
  const f = stat(pid);
  return f ? (Number(f[13]) + Number(f[14])) * TICK_MS : 0;
}

/** CPU ms of every PostgreSQL process on the machine, exited backends included. */
export function postgresCpuMs(): number {
  let total = 0;
  const comms = new Map<number, string[]>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const f = stat(Number(d));
    if (f && f[1] === 'postgres') comms.set(Number(d), f);
  }
  for (const [, f] of comms) {
    total += (Number(f[13]) + Number(f[14])) * TICK_MS;
    const parent = Number(f[3]);
    if (!comms.has(parent)) total += (Number(f[15]) + Number(f[16])) * TICK_MS; // the postmaster
  }
  return total;
}

/** Busy and idle CPU ms of the whole machine so far, every core summed (the first line of /proc/stat). */
export function machineCpuMs(): { busy: number; idle: number } {
  const [user, nice, system, idle, iowait, irq, softirq, steal] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { busy: (user + nice + system + irq + softirq + steal) * TICK_MS, idle: (idle + iowait) * TICK_MS };
}
