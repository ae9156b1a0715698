import { newId } from '../../src/ids';

describe('newId', () => {
  it('is the kind, an underscore and a UUIDv7 in 32 lowercase hex digits, time-ordered and unique', () => {
    const ids = Array.from({ length: 2000 }, () => newId('exec_req'));
    for (const id of ids) {
      expect(id).toMatch(/^exec_req_[0-9a-f]{12}7[0-9a-f]{3}[89ab][0-9a-f]{15}$/);
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids); // UUIDv7 is monotonic within a process
    const ms = parseInt(ids[0].slice('exec_req_'.length, 'exec_req_'.length + 12), 16);
    expect(Math.abs(ms - Date.now())).toBeLessThan(60_000);
  });
});
